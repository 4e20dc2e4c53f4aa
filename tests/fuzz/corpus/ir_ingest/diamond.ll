; A diamond: dia_root defers dia_l and dia_r; both defer the shared dia_s.
; dia_s must be ONE job, referenced by the same key from both sides.
;   dia_s(x) = 2x   dia_l(x) = dia_s(x + 1)   dia_r(x) = dia_s(x + 2) + 1000
;   dia_root(x) = dia_l(x) + dia_r(x);  dia_root(5) = 12 + 1014 = 1026

declare ptr @kiln_deferred(ptr)

define i32 @dia_s(i32 %x) {
  %r = shl i32 %x, 1
  ret i32 %r
}

define i32 @dia_l(i32 %x) {
  %p = call ptr @kiln_deferred(ptr @dia_s)
  %y = add i32 %x, 1
  %r = call i32 %p(i32 %y)
  ret i32 %r
}

define i32 @dia_r(i32 %x) {
  %p = call ptr @kiln_deferred(ptr @dia_s)
  %y = add i32 %x, 2
  %s = call i32 %p(i32 %y)
  %r = add i32 %s, 1000
  ret i32 %r
}

define i32 @dia_root(i32 %x) {
  %pl = call ptr @kiln_deferred(ptr @dia_l)
  %pr = call ptr @kiln_deferred(ptr @dia_r)
  %l = call i32 %pl(i32 %x)
  %r = call i32 %pr(i32 %x)
  %v = add i32 %l, %r
  ret i32 %v
}
