; Child-only change, version 1 (change_v1.ll and change_v2.ll differ only in
; chg_child's body). chg_parent(x) = 2 * chg_child(x).
;   v1: chg_child(x) = x + 1,   chg_parent(5) = 12
;   v2: chg_child(x) = x + 100, chg_parent(5) = 210

declare ptr @kiln_deferred(ptr)

define i32 @chg_child(i32 %x) {
  %r = add i32 %x, 1
  ret i32 %r
}

define i32 @chg_parent(i32 %x) {
  %p = call ptr @kiln_deferred(ptr @chg_child)
  %c = call i32 %p(i32 %x)
  %r = mul i32 %c, 2
  ret i32 %r
}
