; Deferred inside deferred: nest_a defers nest_b, which defers nest_c.
; Three jobs; nest_a(x) = ((x + 100) + 10) * 3, so nest_a(1) = 333.
; nest_b(x) = (x + 10) * 3, nest_c(x) = x * 3.

declare ptr @kiln_deferred(ptr)

define i32 @nest_c(i32 %x) {
  %r = mul i32 %x, 3
  ret i32 %r
}

define i32 @nest_b(i32 %x) {
  %p = call ptr @kiln_deferred(ptr @nest_c)
  %y = add i32 %x, 10
  %r = call i32 %p(i32 %y)
  ret i32 %r
}

define i32 @nest_a(i32 %x) {
  %p = call ptr @kiln_deferred(ptr @nest_b)
  %y = add i32 %x, 100
  %r = call i32 %p(i32 %y)
  ret i32 %r
}
