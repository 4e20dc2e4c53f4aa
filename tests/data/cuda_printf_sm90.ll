; ModuleID = 'cuda_printf.cu'
source_filename = "cuda_printf.cu"
target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

%printf_args = type { i32, i32 }

@.str = private unnamed_addr constant [6 x i8] c"n > 0\00", align 1
@.str1 = private unnamed_addr constant [15 x i8] c"cuda_printf.cu\00", align 1
@__PRETTY_FUNCTION__._Z6reportPKii = private unnamed_addr constant [30 x i8] c"void report(const int *, int)\00", align 1
@.str2 = private unnamed_addr constant [19 x i8] c"thread %d sees %d\0A\00", align 1

; Function Attrs: convergent mustprogress noinline norecurse nounwind
define dso_local ptx_kernel void @_Z6reportPKii(ptr noundef readonly captures(none) %0, i32 noundef %1) local_unnamed_addr #0 {
  %3 = alloca %printf_args, align 8
  %4 = tail call noundef i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %5 = tail call noundef i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %6 = mul i32 %4, %5
  %7 = tail call noundef i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %8 = add i32 %6, %7
  %9 = icmp sgt i32 %1, 0
  br i1 %9, label %11, label %10

10:                                               ; preds = %2
  tail call void @__assertfail(ptr noundef nonnull @.str, ptr noundef nonnull @.str1, i32 noundef 6, ptr noundef nonnull @__PRETTY_FUNCTION__._Z6reportPKii, i64 noundef 1) #7
  br label %11

11:                                               ; preds = %2, %10
  %12 = icmp slt i32 %8, %1
  br i1 %12, label %13, label %19

13:                                               ; preds = %11
  %14 = getelementptr inbounds nuw i8, ptr %3, i64 4
  %15 = sext i32 %8 to i64
  %16 = getelementptr inbounds i32, ptr %0, i64 %15
  %17 = load i32, ptr %16, align 4, !tbaa !4
  store i32 %8, ptr %3, align 8
  store i32 %17, ptr %14, align 4
  %18 = call i32 @vprintf(ptr nonnull @.str2, ptr nonnull %3) #8
  br label %19

19:                                               ; preds = %13, %11
  ret void
}

declare i32 @vprintf(ptr, ptr) local_unnamed_addr

; Function Attrs: convergent mustprogress noinline norecurse nounwind memory(readwrite, argmem: write, target_mem0: none, target_mem1: none)
define dso_local ptx_kernel void @_Z7scratchiPi(i32 noundef %0, ptr noundef writeonly captures(none) %1) local_unnamed_addr #1 {
  %3 = sext i32 %0 to i64
  %4 = shl nsw i64 %3, 2
  %5 = tail call noalias ptr @malloc(i64 noundef %4) #9
  %6 = icmp sgt i32 %0, 0
  br i1 %6, label %7, label %29

7:                                                ; preds = %2
  %8 = and i32 %0, 7
  %9 = icmp ult i32 %0, 8
  br i1 %9, label %14, label %10

10:                                               ; preds = %7
  %11 = and i32 %0, 2147483640
  br label %34

12:                                               ; preds = %34
  %13 = icmp eq i32 %8, 0
  br i1 %13, label %25, label %14

14:                                               ; preds = %12, %7
  %15 = phi i32 [ 0, %7 ], [ %60, %12 ]
  %16 = icmp ne i32 %8, 0
  tail call void @llvm.assume(i1 %16)
  br label %17

17:                                               ; preds = %17, %14
  %18 = phi i32 [ %22, %17 ], [ %15, %14 ]
  %19 = phi i32 [ %23, %17 ], [ 0, %14 ]
  %20 = zext nneg i32 %18 to i64
  %21 = getelementptr inbounds nuw i32, ptr %5, i64 %20
  store i32 %18, ptr %21, align 4, !tbaa !4
  %22 = add nuw nsw i32 %18, 1
  %23 = add i32 %19, 1
  %24 = icmp eq i32 %23, %8
  br i1 %24, label %25, label %17, !llvm.loop !8

25:                                               ; preds = %17, %12
  %26 = getelementptr i32, ptr %5, i64 %3
  %27 = getelementptr i8, ptr %26, i64 -4
  %28 = load i32, ptr %27, align 4, !tbaa !4
  br label %29

29:                                               ; preds = %25, %2
  %30 = phi i32 [ %28, %25 ], [ undef, %2 ]
  %31 = tail call noundef i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %32 = zext nneg i32 %31 to i64
  %33 = getelementptr inbounds nuw i32, ptr %1, i64 %32
  store i32 %30, ptr %33, align 4, !tbaa !4
  tail call void @free(ptr noundef %5) #7
  ret void

34:                                               ; preds = %34, %10
  %35 = phi i32 [ 0, %10 ], [ %60, %34 ]
  %36 = phi i32 [ 0, %10 ], [ %61, %34 ]
  %37 = zext nneg i32 %35 to i64
  %38 = getelementptr inbounds nuw i32, ptr %5, i64 %37
  store i32 %35, ptr %38, align 4, !tbaa !4
  %39 = or disjoint i32 %35, 1
  %40 = zext nneg i32 %39 to i64
  %41 = getelementptr inbounds nuw i32, ptr %5, i64 %40
  store i32 %39, ptr %41, align 4, !tbaa !4
  %42 = or disjoint i32 %35, 2
  %43 = zext nneg i32 %42 to i64
  %44 = getelementptr inbounds nuw i32, ptr %5, i64 %43
  store i32 %42, ptr %44, align 4, !tbaa !4
  %45 = or disjoint i32 %35, 3
  %46 = zext nneg i32 %45 to i64
  %47 = getelementptr inbounds nuw i32, ptr %5, i64 %46
  store i32 %45, ptr %47, align 4, !tbaa !4
  %48 = or disjoint i32 %35, 4
  %49 = zext nneg i32 %48 to i64
  %50 = getelementptr inbounds nuw i32, ptr %5, i64 %49
  store i32 %48, ptr %50, align 4, !tbaa !4
  %51 = or disjoint i32 %35, 5
  %52 = zext nneg i32 %51 to i64
  %53 = getelementptr inbounds nuw i32, ptr %5, i64 %52
  store i32 %51, ptr %53, align 4, !tbaa !4
  %54 = or disjoint i32 %35, 6
  %55 = zext nneg i32 %54 to i64
  %56 = getelementptr inbounds nuw i32, ptr %5, i64 %55
  store i32 %54, ptr %56, align 4, !tbaa !4
  %57 = or disjoint i32 %35, 7
  %58 = zext nneg i32 %57 to i64
  %59 = getelementptr inbounds nuw i32, ptr %5, i64 %58
  store i32 %57, ptr %59, align 4, !tbaa !4
  %60 = add nuw nsw i32 %35, 8
  %61 = add i32 %36, 8
  %62 = icmp eq i32 %61, %11
  br i1 %62, label %12, label %34, !llvm.loop !10
}

; Function Attrs: convergent mustprogress nofree nounwind willreturn allockind("alloc,uninitialized") allocsize(0) memory(inaccessiblemem: readwrite)
declare dso_local noalias noundef ptr @malloc(i64 noundef) local_unnamed_addr #2

; Function Attrs: convergent mustprogress nounwind willreturn allockind("free") memory(argmem: readwrite, inaccessiblemem: readwrite)
declare dso_local void @free(ptr allocptr noundef captures(none)) local_unnamed_addr #3

; Function Attrs: mustprogress nocallback nofree nosync nounwind speculatable willreturn memory(none)
declare noundef range(i32 0, 2147483647) i32 @llvm.nvvm.read.ptx.sreg.ctaid.x() #4

; Function Attrs: mustprogress nocallback nofree nosync nounwind speculatable willreturn memory(none)
declare noundef range(i32 1, 1025) i32 @llvm.nvvm.read.ptx.sreg.ntid.x() #4

; Function Attrs: mustprogress nocallback nofree nosync nounwind speculatable willreturn memory(none)
declare noundef range(i32 0, 1024) i32 @llvm.nvvm.read.ptx.sreg.tid.x() #4

; Function Attrs: convergent nounwind
declare dso_local void @__assertfail(ptr noundef, ptr noundef, i32 noundef, ptr noundef, i64 noundef) local_unnamed_addr #5

; Function Attrs: nocallback nofree nosync nounwind willreturn memory(inaccessiblemem: write)
declare void @llvm.assume(i1 noundef) #6

attributes #0 = { convergent mustprogress noinline norecurse nounwind "frame-pointer"="all" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="sm_90" "target-features"="+ptx88,+sm_90" "uniform-work-group-size"="true" }
attributes #1 = { convergent mustprogress noinline norecurse nounwind memory(readwrite, argmem: write, target_mem0: none, target_mem1: none) "frame-pointer"="all" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="sm_90" "target-features"="+ptx88,+sm_90" "uniform-work-group-size"="true" }
attributes #2 = { convergent mustprogress nofree nounwind willreturn allockind("alloc,uninitialized") allocsize(0) memory(inaccessiblemem: readwrite) "alloc-family"="malloc" "frame-pointer"="all" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="sm_90" "target-features"="+ptx88,+sm_90" }
attributes #3 = { convergent mustprogress nounwind willreturn allockind("free") memory(argmem: readwrite, inaccessiblemem: readwrite) "alloc-family"="malloc" "frame-pointer"="all" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="sm_90" "target-features"="+ptx88,+sm_90" }
attributes #4 = { mustprogress nocallback nofree nosync nounwind speculatable willreturn memory(none) }
attributes #5 = { convergent nounwind "frame-pointer"="all" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="sm_90" "target-features"="+ptx88,+sm_90" }
attributes #6 = { nocallback nofree nosync nounwind willreturn memory(inaccessiblemem: write) }
attributes #7 = { convergent nounwind }
attributes #8 = { nounwind }
attributes #9 = { convergent nounwind allocsize(0) }

!llvm.module.flags = !{!0, !1, !2}
!llvm.errno.tbaa = !{!4}

!0 = !{i32 1, !"wchar_size", i32 4}
!1 = !{i32 4, !"nvvm-reflect-ftz", i32 0}
!2 = !{i32 7, !"frame-pointer", i32 2}
!4 = !{!5, !5, i64 0}
!5 = !{!"int", !6, i64 0}
!6 = !{!"omnipotent char", !7, i64 0}
!7 = !{!"Simple C++ TBAA"}
!8 = distinct !{!8, !9}
!9 = !{!"llvm.loop.unroll.disable"}
!10 = distinct !{!10, !11}
!11 = !{!"llvm.loop.mustprogress"}
