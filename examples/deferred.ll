; Kiln example: deferred references.
;
; `%p = call ptr @kiln_deferred(ptr @f)` means "the address of @f, compiled
; as its own job for the same target and options". The caller then calls %p
; indirectly. A job is keyed by the hash of its own code, so changing @f's
; body recompiles only @f's job; its callers stay cached and are relinked.
;
; Precompile every externally visible function as a root, then run the host
; program against the same cache:
;   kiln-precompile --cache kiln.db examples/deferred.ll
;   ./host_main kiln.db
;
; Expected output of host_main:
;   saxpy_like(2, 3, 4) = 10
;   fib(20) = 6765
;   collatz(27) = 111
;   fib_calls(10) = 177

declare ptr @kiln_deferred(ptr)

; --- Nested: saxpy_like -> axpy -> scale ------------------------------------
; A deferred job may itself defer: three jobs, each its own translation unit.
; saxpy_like(a, x, y) = a * x + y.

define double @scale(double %a, double %x) {
  %ax = fmul double %a, %x
  ret double %ax
}

define double @axpy(double %a, double %x, double %y) {
  %scale = call ptr @kiln_deferred(ptr @scale)
  %ax = call double %scale(double %a, double %x)
  %r = fadd double %ax, %y
  ret double %r
}

define double @saxpy_like(double %a, double %x, double %y) {
  %axpy = call ptr @kiln_deferred(ptr @axpy)
  %r = call double %axpy(double %a, double %x, double %y)
  ret double %r
}

; --- Recursive, with a shared global: fib and fib_calls --------------------
; fib calls itself through its own deferred pointer: one job whose deferred
; reference resolves to itself (the driver's visited set stops the loop).
; Every fib call bumps @fib_counter. fib_calls resets it, runs fib in a
; deferred job and reads it back: parent and child see ONE global at run
; time, so fib_calls(n) = number of fib calls = 2 * fib(n + 1) - 1.

@fib_counter = global i64 0

define i64 @fib(i64 %n) {
entry:
  %c = load i64, ptr @fib_counter
  %c1 = add i64 %c, 1
  store i64 %c1, ptr @fib_counter
  %small = icmp slt i64 %n, 2
  br i1 %small, label %base, label %rec

base:
  ret i64 %n

rec:
  %self = call ptr @kiln_deferred(ptr @fib)
  %n1 = sub i64 %n, 1
  %a = call i64 %self(i64 %n1)
  %n2 = sub i64 %n, 2
  %b = call i64 %self(i64 %n2)
  %r = add i64 %a, %b
  ret i64 %r
}

define i64 @fib_calls(i64 %n) {
  store i64 0, ptr @fib_counter
  %fib = call ptr @kiln_deferred(ptr @fib)
  %unused = call i64 %fib(i64 %n)
  %count = load i64, ptr @fib_counter
  ret i64 %count
}

; --- A cycle: collatz -> collatz_even / collatz_odd -> collatz -------------
; Deferred references may form cycles; each function is still compiled once.
; collatz(n) = number of steps for n to reach 1.

define i64 @collatz(i64 %n) {
entry:
  %at_one = icmp sle i64 %n, 1
  br i1 %at_one, label %done, label %step

done:
  ret i64 0

step:
  %bit = and i64 %n, 1
  %is_even = icmp eq i64 %bit, 0
  %even = call ptr @kiln_deferred(ptr @collatz_even)
  %odd = call ptr @kiln_deferred(ptr @collatz_odd)
  %next = select i1 %is_even, ptr %even, ptr %odd
  %rest = call i64 %next(i64 %n)
  %steps = add i64 %rest, 1
  ret i64 %steps
}

define i64 @collatz_even(i64 %n) {
  %half = lshr i64 %n, 1
  %collatz = call ptr @kiln_deferred(ptr @collatz)
  %r = call i64 %collatz(i64 %half)
  ret i64 %r
}

define i64 @collatz_odd(i64 %n) {
  %n3 = mul i64 %n, 3
  %n31 = add i64 %n3, 1
  %collatz = call ptr @kiln_deferred(ptr @collatz)
  %r = call i64 %collatz(i64 %n31)
  ret i64 %r
}
