; NVIDIA kernels with deferred device functions: nested (k_nested -> d_mid ->
; d_leaf), self-recursive (d_fact defers itself) and a three-cycle
; (d_ca -> d_cb -> d_cc -> d_ca). Kernels carry the ptx_kernel convention.
;   k_nested(out, x): out[0] = (x + 1) * 2
;   k_fact(out, n):   out[0] = n!
;   k_cycle(out, n):  out[0] = n + 3 * (n / 3) ... computed by the cycle below

declare ptr @kiln_deferred(ptr)

@calls = global i32 0

define i32 @d_leaf(i32 %x) {
  %r = add i32 %x, 1
  ret i32 %r
}

define i32 @d_mid(i32 %x) {
  %leaf = call ptr @kiln_deferred(ptr @d_leaf)
  %y = call i32 %leaf(i32 %x)
  %r = mul i32 %y, 2
  ret i32 %r
}

define ptx_kernel void @k_nested(ptr %out, i32 %x) {
  %mid = call ptr @kiln_deferred(ptr @d_mid)
  %r = call i32 %mid(i32 %x)
  store i32 %r, ptr %out
  ret void
}

define i32 @d_fact(i32 %n) {
entry:
  %c = load i32, ptr @calls
  %c1 = add i32 %c, 1
  store i32 %c1, ptr @calls
  %small = icmp slt i32 %n, 2
  br i1 %small, label %base, label %rec
base:
  ret i32 1
rec:
  %self = call ptr @kiln_deferred(ptr @d_fact)
  %n1 = sub i32 %n, 1
  %f = call i32 %self(i32 %n1)
  %r = mul i32 %n, %f
  ret i32 %r
}

define ptx_kernel void @k_fact(ptr %out, i32 %n) {
  store i32 0, ptr @calls
  %fact = call ptr @kiln_deferred(ptr @d_fact)
  %r = call i32 %fact(i32 %n)
  store i32 %r, ptr %out
  %c = load i32, ptr @calls
  %out1 = getelementptr i32, ptr %out, i64 1
  store i32 %c, ptr %out1
  ret void
}

; d_ca(n) = n <= 0 ? 0 : 1 + d_cb(n - 1), and so on round the cycle: n steps.
define i32 @d_ca(i32 %n) {
entry:
  %done = icmp sle i32 %n, 0
  br i1 %done, label %stop, label %go
stop:
  ret i32 0
go:
  %next = call ptr @kiln_deferred(ptr @d_cb)
  %m = sub i32 %n, 1
  %r = call i32 %next(i32 %m)
  %r1 = add i32 %r, 1
  ret i32 %r1
}

define i32 @d_cb(i32 %n) {
  %next = call ptr @kiln_deferred(ptr @d_cc)
  %r = call i32 %next(i32 %n)
  %r1 = add i32 %r, 10
  ret i32 %r1
}

define i32 @d_cc(i32 %n) {
  %next = call ptr @kiln_deferred(ptr @d_ca)
  %r = call i32 %next(i32 %n)
  %r1 = add i32 %r, 100
  ret i32 %r1
}

define ptx_kernel void @k_cycle(ptr %out, i32 %n) {
  %ca = call ptr @kiln_deferred(ptr @d_ca)
  %r = call i32 %ca(i32 %n)
  store i32 %r, ptr %out
  ret void
}
