; Invalid IR on purpose: line 13 has a malformed operand ("i33x").
; The error message must name this file and line 13.

declare ptr @kiln_deferred(ptr)

define i32 @bad_ok(i32 %x) {
  %r = add i32 %x, 1
  ret i32 %r
}

; ---
define i32 @bad_broken(i32 %x) {
  %r = add i33x %x, 1
  ret i32 %r
}
