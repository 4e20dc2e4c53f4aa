; Invalid for Kiln on purpose: bdd_parent defers bdd_missing, a function that
; is declared but not defined anywhere in the unit. The error must name the
; parent bdd_parent.

declare ptr @kiln_deferred(ptr)
declare i32 @bdd_missing(i32)

define i32 @bdd_parent(i32 %x) {
  %p = call ptr @kiln_deferred(ptr @bdd_missing)
  %r = call i32 %p(i32 %x)
  ret i32 %r
}
