; Invalid for Kiln on purpose: bdg_parent passes a global variable, not a
; function, to kiln_deferred. The error must name the parent bdg_parent.

declare ptr @kiln_deferred(ptr)

@bdg_data = global i32 42

define i32 @bdg_parent(i32 %x) {
  %p = call ptr @kiln_deferred(ptr @bdg_data)
  %r = call i32 %p(i32 %x)
  ret i32 %r
}
