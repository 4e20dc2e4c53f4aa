; dd_root calls dd_f directly AND defers dd_f. The direct call is part of
; dd_root's own job; the deferred reference is a second job. Linking both into
; one image must not clash.
;   dd_f(x) = x + 7
;   dd_root(x) = dd_f(x) * 1000 + dd_f(10x);  dd_root(1) = 8000 + 17 = 8017

declare ptr @kiln_deferred(ptr)

define i32 @dd_f(i32 %x) {
  %r = add i32 %x, 7
  ret i32 %r
}

define i32 @dd_root(i32 %x) {
  %a = call i32 @dd_f(i32 %x)
  %p = call ptr @kiln_deferred(ptr @dd_f)
  %y = mul i32 %x, 10
  %b = call i32 %p(i32 %y)
  %a1000 = mul i32 %a, 1000
  %v = add i32 %a1000, %b
  ret i32 %v
}
