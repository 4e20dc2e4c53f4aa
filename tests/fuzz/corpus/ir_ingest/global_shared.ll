; A parent and its deferred children share one global at run time.
; glob_root increments @glob_counter, calls its deferred child glob_child
; (which increments it too), then returns the value read by the deferred
; getter glob_get. If each job had its own copy, the result would not be 2.
;   first glob_root() = 2, second = 4; glob_get() then returns 4.

declare ptr @kiln_deferred(ptr)

@glob_counter = global i32 0

define void @glob_child() {
  %v = load i32, ptr @glob_counter
  %w = add i32 %v, 1
  store i32 %w, ptr @glob_counter
  ret void
}

define i32 @glob_get() {
  %v = load i32, ptr @glob_counter
  ret i32 %v
}

define i32 @glob_root() {
  %v = load i32, ptr @glob_counter
  %w = add i32 %v, 1
  store i32 %w, ptr @glob_counter
  %child = call ptr @kiln_deferred(ptr @glob_child)
  call void %child()
  %get = call ptr @kiln_deferred(ptr @glob_get)
  %r = call i32 %get()
  ret i32 %r
}
