; A chain of eight nested deferred jobs: chain0 -> chain1 -> ... -> chain7.
; chain_i(x) = chain_{i+1}(x + 2^i) and chain7(x) = x + 128, so
; chain0(x) = x + 255 only if every job ran; chain3(0) = 248.

declare ptr @kiln_deferred(ptr)

define i32 @chain0(i32 %x) {
  %p = call ptr @kiln_deferred(ptr @chain1)
  %y = add i32 %x, 1
  %r = call i32 %p(i32 %y)
  ret i32 %r
}

define i32 @chain1(i32 %x) {
  %p = call ptr @kiln_deferred(ptr @chain2)
  %y = add i32 %x, 2
  %r = call i32 %p(i32 %y)
  ret i32 %r
}

define i32 @chain2(i32 %x) {
  %p = call ptr @kiln_deferred(ptr @chain3)
  %y = add i32 %x, 4
  %r = call i32 %p(i32 %y)
  ret i32 %r
}

define i32 @chain3(i32 %x) {
  %p = call ptr @kiln_deferred(ptr @chain4)
  %y = add i32 %x, 8
  %r = call i32 %p(i32 %y)
  ret i32 %r
}

define i32 @chain4(i32 %x) {
  %p = call ptr @kiln_deferred(ptr @chain5)
  %y = add i32 %x, 16
  %r = call i32 %p(i32 %y)
  ret i32 %r
}

define i32 @chain5(i32 %x) {
  %p = call ptr @kiln_deferred(ptr @chain6)
  %y = add i32 %x, 32
  %r = call i32 %p(i32 %y)
  ret i32 %r
}

define i32 @chain6(i32 %x) {
  %p = call ptr @kiln_deferred(ptr @chain7)
  %y = add i32 %x, 64
  %r = call i32 %p(i32 %y)
  ret i32 %r
}

define i32 @chain7(i32 %x) {
  %r = add i32 %x, 128
  ret i32 %r
}
