; Target-neutral kernels: the "kiln-kernel" attribute marks a kernel, and
; each target gives it its own kernel convention (ptx_kernel on NVIDIA,
; amdgpu_kernel on AMD, a plain function on the host). One unit, one command:
;
;   kiln-precompile --target sm_90 --target gfx942 --target host examples/kernels.ll
;
; apply(out, in, n) writes out[i] = op(in[i]) for i < n, where op is a
; deferred job that itself defers to a helper: three jobs per target.

declare ptr @kiln_deferred(ptr)

define float @square(float %x) {
  %r = fmul float %x, %x
  ret float %r
}

; op(x) = square(x) + 1, with square compiled as its own job.
define float @op(float %x) {
  %sq = call ptr @kiln_deferred(ptr @square)
  %y = call float %sq(float %x)
  %r = fadd float %y, 1.0
  ret float %r
}

define void @apply(ptr %out, ptr %in, i32 %n) #0 {
entry:
  %op = call ptr @kiln_deferred(ptr @op)
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %next, %body ]
  %more = icmp slt i32 %i, %n
  br i1 %more, label %body, label %done
body:
  %idx = sext i32 %i to i64
  %src = getelementptr float, ptr %in, i64 %idx
  %x = load float, ptr %src
  %y = call float %op(float %x)
  %dst = getelementptr float, ptr %out, i64 %idx
  store float %y, ptr %dst
  %next = add i32 %i, 1
  br label %loop
done:
  ret void
}

attributes #0 = { "kiln-kernel" }
