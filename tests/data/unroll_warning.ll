; A loop that asks to be unrolled fully but cannot be (its trip count is
; unknown): LLVM warns "loop not unrolled", a warning for the job.
define void @f(ptr %p, i32 %n) {
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %i1, %loop ]
  %a = getelementptr i32, ptr %p, i32 %i
  store i32 %i, ptr %a
  %i1 = add i32 %i, 1
  %c = icmp slt i32 %i1, %n
  br i1 %c, label %loop, label %exit, !llvm.loop !0
exit:
  ret void
}
!0 = distinct !{!0, !1}
!1 = !{!"llvm.loop.unroll.full"}
