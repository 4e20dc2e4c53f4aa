; Second file of a two-file unit (with multi_a.ll): defines mf_child.

define i32 @mf_child(i32 %x) {
  %r = sub i32 %x, 3
  ret i32 %r
}
