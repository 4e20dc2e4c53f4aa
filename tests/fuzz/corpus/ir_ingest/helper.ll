; The deferred reference sits inside an internal helper that the entry calls
; directly: it belongs to hlp_root's job. hlp_helper is internal, so it is
; never a root or a job of its own.
;   hlp_child(x) = 5x   hlp_root(x) = hlp_child(x) + 1 + 2;  hlp_root(4) = 23

declare ptr @kiln_deferred(ptr)

define i32 @hlp_child(i32 %x) {
  %r = mul i32 %x, 5
  ret i32 %r
}

define internal i32 @hlp_helper(i32 %x) {
  %p = call ptr @kiln_deferred(ptr @hlp_child)
  %r = call i32 %p(i32 %x)
  %v = add i32 %r, 1
  ret i32 %v
}

define i32 @hlp_root(i32 %x) {
  %r = call i32 @hlp_helper(i32 %x)
  %v = add i32 %r, 2
  ret i32 %v
}
