; A function deferring to itself: factorial through its own deferred pointer.
; One job whose only deferred reference resolves to its own key.
; fact(10) = 3628800, fact(1) = 1.

declare ptr @kiln_deferred(ptr)

define i32 @fact(i32 %n) {
entry:
  %small = icmp sle i32 %n, 1
  br i1 %small, label %base, label %rec

base:
  ret i32 1

rec:
  %self = call ptr @kiln_deferred(ptr @fact)
  %m = sub i32 %n, 1
  %r = call i32 %self(i32 %m)
  %v = mul i32 %n, %r
  ret i32 %v
}
