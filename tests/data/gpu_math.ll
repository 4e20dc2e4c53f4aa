; Kernels calling device math: NVIDIA's libdevice (__nv_sinf) and AMD's
; ROCm device library (__ocml_sin_f32). Each deferred child calls the
; library, so the library is linked into the child's job, not the parent's.
declare ptr @kiln_deferred(ptr)
declare float @__nv_sinf(float)
declare float @__ocml_sin_f32(float)

define float @nv_wave(float %x) {
  %s = call float @__nv_sinf(float %x)
  ret float %s
}

define float @amd_wave(float %x) {
  %s = call float @__ocml_sin_f32(float %x)
  ret float %s
}

define void @k_nv(ptr %out, float %x) "kiln-kernel" {
  %f = call ptr @kiln_deferred(ptr @nv_wave)
  %r = call float %f(float %x)
  store float %r, ptr %out
  ret void
}

define void @k_amd(ptr %out, float %x) "kiln-kernel" {
  %f = call ptr @kiln_deferred(ptr @amd_wave)
  %r = call float %f(float %x)
  store float %r, ptr %out
  ret void
}
