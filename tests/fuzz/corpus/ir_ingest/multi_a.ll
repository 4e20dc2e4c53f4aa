; First file of a two-file unit (with multi_b.ll). mf_root defers mf_child,
; which is only declared here and defined in multi_b.ll: the reference
; resolves once the files are linked into one unit.
;   mf_child(x) = x - 3,  mf_root(x) = mf_child(x) * 4;  mf_root(10) = 28

declare ptr @kiln_deferred(ptr)
declare i32 @mf_child(i32)

define i32 @mf_root(i32 %x) {
  %p = call ptr @kiln_deferred(ptr @mf_child)
  %c = call i32 %p(i32 %x)
  %r = mul i32 %c, 4
  ret i32 %r
}
