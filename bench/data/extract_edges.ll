; ModuleID = 'extract_edges.cpp'
source_filename = "extract_edges.cpp"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

%struct.Box = type { i32 }

$_ZN3BoxD2Ev = comdat any

@counter = dso_local local_unnamed_addr global i32 0, align 4
@global_box = dso_local global %struct.Box zeroinitializer, align 4
@__dso_handle = external hidden global i8
@llvm.global_ctors = appending global [1 x { i32, ptr, ptr }] [{ i32, ptr, ptr } { i32 65535, ptr @_GLOBAL__sub_I_extract_edges.cpp, ptr null }]

@aliased = dso_local alias i32 (i32), ptr @aliased_impl

; Function Attrs: mustprogress nounwind uwtable
define linkonce_odr dso_local void @_ZN3BoxD2Ev(ptr noundef nonnull align 4 dereferenceable(4) %0) unnamed_addr #0 comdat align 2 {
  %2 = load i32, ptr @counter, align 4, !tbaa !5
  %3 = add nsw i32 %2, -1
  store i32 %3, ptr @counter, align 4, !tbaa !5
  ret void
}

; Function Attrs: nofree nounwind
declare i32 @__cxa_atexit(ptr, ptr, ptr) local_unnamed_addr #1

; Function Attrs: mustprogress nofree norecurse nosync nounwind willreturn memory(readwrite, argmem: none, inaccessiblemem: none, target_mem0: none, target_mem1: none) uwtable
define dso_local range(i32 -2147483642, -2147483648) i32 @use_template() local_unnamed_addr #2 {
  %1 = load i32, ptr @counter, align 4, !tbaa !5
  %2 = add nsw i32 %1, 1
  store i32 %2, ptr @counter, align 4, !tbaa !5
  %3 = add nsw i32 %1, 6
  ret i32 %3
}

; Function Attrs: mustprogress nofree norecurse nosync nounwind willreturn memory(readwrite, argmem: none, inaccessiblemem: none, target_mem0: none, target_mem1: none) uwtable
define dso_local noundef double @use_double(double noundef %0) local_unnamed_addr #2 {
  %2 = load i32, ptr @counter, align 4, !tbaa !5
  %3 = add nsw i32 %2, 1
  store i32 %3, ptr @counter, align 4, !tbaa !5
  %4 = fadd double %0, %0
  %5 = fadd double %4, 3.000000e+00
  ret double %5
}

; Function Attrs: mustprogress nofree norecurse nosync nounwind willreturn memory(readwrite, argmem: none, inaccessiblemem: none, target_mem0: none, target_mem1: none) uwtable
define dso_local range(i32 -2147483646, -2147483648) i32 @other(i32 noundef %0) local_unnamed_addr #2 {
  %2 = load i32, ptr @counter, align 4, !tbaa !5
  %3 = add nsw i32 %0, 2
  %4 = add i32 %0, -1
  %5 = add i32 %4, %2
  store i32 %5, ptr @counter, align 4, !tbaa !5
  ret i32 %3
}

; Function Attrs: mustprogress nofree norecurse nosync nounwind willreturn memory(none) uwtable
define dso_local i32 @aliased_impl(i32 noundef %0) #3 {
  %2 = mul nsw i32 %0, 3
  ret i32 %2
}

; Function Attrs: mustprogress nofree norecurse nosync nounwind willreturn memory(none) uwtable
define dso_local range(i32 -2147483647, -2147483648) i32 @calls_alias(i32 noundef %0) local_unnamed_addr #3 {
  %2 = mul nsw i32 %0, 3
  %3 = add nsw i32 %2, 1
  ret i32 %3
}

; Function Attrs: nofree nounwind uwtable
define internal void @_GLOBAL__sub_I_extract_edges.cpp() #4 section ".text.startup" {
  store i32 7, ptr @global_box, align 4, !tbaa !9
  %1 = load i32, ptr @counter, align 4, !tbaa !5
  %2 = add nsw i32 %1, 7
  store i32 %2, ptr @counter, align 4, !tbaa !5
  %3 = tail call i32 @__cxa_atexit(ptr nonnull @_ZN3BoxD2Ev, ptr nonnull @global_box, ptr nonnull @__dso_handle) #5
  ret void
}

attributes #0 = { mustprogress nounwind uwtable "min-legal-vector-width"="0" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cmov,+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "tune-cpu"="generic" }
attributes #1 = { nofree nounwind }
attributes #2 = { mustprogress nofree norecurse nosync nounwind willreturn memory(readwrite, argmem: none, inaccessiblemem: none, target_mem0: none, target_mem1: none) uwtable "min-legal-vector-width"="0" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cmov,+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "tune-cpu"="generic" }
attributes #3 = { mustprogress nofree norecurse nosync nounwind willreturn memory(none) uwtable "min-legal-vector-width"="0" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cmov,+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "tune-cpu"="generic" }
attributes #4 = { nofree nounwind uwtable "min-legal-vector-width"="0" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cmov,+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "tune-cpu"="generic" }
attributes #5 = { nounwind }

!llvm.module.flags = !{!0, !1, !2, !3}
!llvm.ident = !{!4}
!llvm.errno.tbaa = !{!5}

!0 = !{i32 1, !"wchar_size", i32 4}
!1 = !{i32 8, !"PIC Level", i32 2}
!2 = !{i32 7, !"PIE Level", i32 2}
!3 = !{i32 7, !"uwtable", i32 2}
!4 = !{!"Debian clang version 22.1.8 (1~deb12u1)"}
!5 = !{!6, !6, i64 0}
!6 = !{!"int", !7, i64 0}
!7 = !{!"omnipotent char", !8, i64 0}
!8 = !{!"Simple C++ TBAA"}
!9 = !{!10, !6, i64 0}
!10 = !{!"_ZTS3Box", !6, i64 0}
