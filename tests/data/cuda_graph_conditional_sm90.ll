; ModuleID = 'graph_conditional.cu'
source_filename = "graph_conditional.cu"
target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

%printf_args = type { i32 }

@.str = private unnamed_addr constant [26 x i8] c"GPU: condition set to %u\0A\00", align 1

; Function Attrs: convergent mustprogress noinline norecurse nounwind
define dso_local ptx_kernel void @_Z12if_conditionPKcy(ptr noundef readonly captures(none) %0, i64 noundef %1) local_unnamed_addr #0 {
  %3 = alloca %printf_args, align 8
  %4 = load i8, ptr %0, align 1, !tbaa !8
  %5 = and i8 %4, 1
  %6 = zext nneg i8 %5 to i32
  tail call void @cudaGraphSetConditional(i64 noundef %1, i32 noundef %6) #2
  store i32 %6, ptr %3, align 8
  %7 = call i32 @vprintf(ptr nonnull @.str, ptr nonnull %3) #3
  ret void
}

; Function Attrs: convergent nounwind
declare dso_local void @cudaGraphSetConditional(i64 noundef, i32 noundef) local_unnamed_addr #1

declare i32 @vprintf(ptr, ptr) local_unnamed_addr

; Function Attrs: convergent mustprogress noinline norecurse nounwind
define dso_local ptx_kernel void @_Z10while_bodyPcy(ptr noundef captures(none) %0, i64 noundef %1) local_unnamed_addr #0 {
  %3 = load i8, ptr %0, align 1, !tbaa !8
  %4 = add i8 %3, -1
  store i8 %4, ptr %0, align 1, !tbaa !8
  %5 = icmp eq i8 %4, 0
  br i1 %5, label %6, label %7

6:                                                ; preds = %2
  tail call void @cudaGraphSetConditional(i64 noundef %1, i32 noundef 0) #2
  br label %7

7:                                                ; preds = %6, %2
  ret void
}

; Function Attrs: convergent mustprogress noinline norecurse nounwind
define dso_local ptx_kernel void @_Z12clear_branchPKiyy(ptr noundef readonly captures(none) %0, i64 noundef %1, i64 noundef %2) local_unnamed_addr #0 {
  %4 = load i32, ptr %0, align 4, !tbaa !4
  %5 = icmp eq i32 %4, 0
  %6 = select i1 %5, i64 %1, i64 %2
  tail call void @cudaGraphSetConditional(i64 noundef %6, i32 noundef 0) #2
  ret void
}

attributes #0 = { convergent mustprogress noinline norecurse nounwind "frame-pointer"="all" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="sm_90" "target-features"="+ptx88,+sm_90" "uniform-work-group-size"="true" }
attributes #1 = { convergent nounwind "frame-pointer"="all" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="sm_90" "target-features"="+ptx88,+sm_90" }
attributes #2 = { convergent nounwind }
attributes #3 = { nounwind }

!llvm.module.flags = !{!0, !1, !2}
!llvm.ident = !{!3}
!llvm.errno.tbaa = !{!4}

!0 = !{i32 1, !"wchar_size", i32 4}
!1 = !{i32 4, !"nvvm-reflect-ftz", i32 0}
!2 = !{i32 7, !"frame-pointer", i32 2}
!3 = !{!"Debian clang version 22.1.8 (1~deb12u1)"}
!4 = !{!5, !5, i64 0}
!5 = !{!"int", !6, i64 0}
!6 = !{!"omnipotent char", !7, i64 0}
!7 = !{!"Simple C++ TBAA"}
!8 = !{!6, !6, i64 0}
