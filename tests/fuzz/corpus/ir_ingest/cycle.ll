; A three-cycle of deferred references: cyc_a -> cyc_b -> cyc_c -> cyc_a.
; Each step decrements the counter %n and adds its own mark (a: 1, b: 10,
; c: 100); at %n <= 0 it returns its base (a: 1000, b: 2000, c: 3000).
;   cyc_a(0) = 1000    cyc_a(3) = 1111    cyc_a(4) = 2112
;   cyc_b(0) = 2000    cyc_c(2) = 2101

declare ptr @kiln_deferred(ptr)

define i32 @cyc_a(i32 %n) {
entry:
  %done = icmp sle i32 %n, 0
  br i1 %done, label %base, label %step

base:
  ret i32 1000

step:
  %p = call ptr @kiln_deferred(ptr @cyc_b)
  %m = sub i32 %n, 1
  %r = call i32 %p(i32 %m)
  %v = add i32 %r, 1
  ret i32 %v
}

define i32 @cyc_b(i32 %n) {
entry:
  %done = icmp sle i32 %n, 0
  br i1 %done, label %base, label %step

base:
  ret i32 2000

step:
  %p = call ptr @kiln_deferred(ptr @cyc_c)
  %m = sub i32 %n, 1
  %r = call i32 %p(i32 %m)
  %v = add i32 %r, 10
  ret i32 %v
}

define i32 @cyc_c(i32 %n) {
entry:
  %done = icmp sle i32 %n, 0
  br i1 %done, label %base, label %step

base:
  ret i32 3000

step:
  %p = call ptr @kiln_deferred(ptr @cyc_a)
  %m = sub i32 %n, 1
  %r = call i32 %p(i32 %m)
  %v = add i32 %r, 100
  ret i32 %v
}
