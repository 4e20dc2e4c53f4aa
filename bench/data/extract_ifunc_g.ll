; ModuleID = 'extract_ifunc.c'
source_filename = "extract_ifunc.c"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

$clone_me.resolver = comdat any

@__cpu_model = external dso_local local_unnamed_addr global { i32, i32, i32, [1 x i32] }

@clone_me.ifunc = weak_odr dso_local alias i32 (i32), ptr @clone_me

@clone_me = weak_odr dso_local ifunc i32 (i32), ptr @clone_me.resolver

; Function Attrs: mustprogress nofree norecurse nosync nounwind willreturn memory(none) uwtable
define dso_local range(i32 -2147483648, 2147483647) i32 @clone_me.avx2.0(i32 noundef %0) #0 !dbg !14 {
    #dbg_value(i32 %0, !19, !DIExpression(), !20)
  %2 = shl nsw i32 %0, 1, !dbg !21
  ret i32 %2, !dbg !22
}

; Function Attrs: mustprogress nofree norecurse nosync nounwind willreturn memory(none) uwtable
define dso_local range(i32 -2147483648, 2147483647) i32 @clone_me.default.1(i32 noundef %0) #1 !dbg !23 {
    #dbg_value(i32 %0, !25, !DIExpression(), !26)
  %2 = shl nsw i32 %0, 1, !dbg !27
  ret i32 %2, !dbg !28
}

; Function Attrs: disable_sanitizer_instrumentation
define weak_odr dso_local ptr @clone_me.resolver() #2 comdat {
  tail call void @__cpu_indicator_init()
  %1 = load i32, ptr getelementptr inbounds nuw (i8, ptr @__cpu_model, i64 12), align 4
  %2 = and i32 %1, 1024
  %3 = icmp eq i32 %2, 0
  %4 = select i1 %3, ptr @clone_me.default.1, ptr @clone_me.avx2.0
  ret ptr %4
}

; Function Attrs: nounwind uwtable
define dso_local range(i32 -2147483647, -2147483648) i32 @use_clone(i32 noundef %0) local_unnamed_addr #3 !dbg !29 {
    #dbg_value(i32 %0, !31, !DIExpression(), !32)
  %2 = tail call i32 @clone_me(i32 noundef %0) #4, !dbg !33
  %3 = add nsw i32 %2, 1, !dbg !34
  ret i32 %3, !dbg !35
}

; Function Attrs: mustprogress nofree norecurse nosync nounwind willreturn memory(none) uwtable
define dso_local range(i32 -2147483648, 2147483647) i32 @plain(i32 noundef %0) local_unnamed_addr #1 !dbg !36 {
    #dbg_value(i32 %0, !38, !DIExpression(), !39)
  %2 = add nsw i32 %0, -1, !dbg !40
  ret i32 %2, !dbg !41
}

declare dso_local void @__cpu_indicator_init() local_unnamed_addr

attributes #0 = { mustprogress nofree norecurse nosync nounwind willreturn memory(none) uwtable "min-legal-vector-width"="0" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+avx,+avx2,+cmov,+crc32,+cx8,+fxsr,+mmx,+popcnt,+sse,+sse2,+sse3,+sse4.1,+sse4.2,+ssse3,+x87,+xsave" "tune-cpu"="generic" }
attributes #1 = { mustprogress nofree norecurse nosync nounwind willreturn memory(none) uwtable "min-legal-vector-width"="0" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cmov,+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "tune-cpu"="generic" }
attributes #2 = { disable_sanitizer_instrumentation }
attributes #3 = { nounwind uwtable "min-legal-vector-width"="0" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cmov,+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "tune-cpu"="generic" }
attributes #4 = { nounwind }

!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!2, !3, !4, !5, !6, !7, !8}
!llvm.ident = !{!9}
!llvm.errno.tbaa = !{!10}

!0 = distinct !DICompileUnit(language: DW_LANG_C11, file: !1, producer: "Debian clang version 22.1.8 (1~deb12u1)", isOptimized: true, runtimeVersion: 0, emissionKind: FullDebug, splitDebugInlining: false, nameTableKind: None)
!1 = !DIFile(filename: "extract_ifunc.c", directory: ".", checksumkind: CSK_MD5, checksum: "a6ed58e4a40d05566a06879203c6cbb7")
!2 = !{i32 7, !"Dwarf Version", i32 5}
!3 = !{i32 2, !"Debug Info Version", i32 3}
!4 = !{i32 1, !"wchar_size", i32 4}
!5 = !{i32 8, !"PIC Level", i32 2}
!6 = !{i32 7, !"PIE Level", i32 2}
!7 = !{i32 7, !"uwtable", i32 2}
!8 = !{i32 7, !"debug-info-assignment-tracking", i1 true}
!9 = !{!"Debian clang version 22.1.8 (1~deb12u1)"}
!10 = !{!11, !11, i64 0}
!11 = !{!"int", !12, i64 0}
!12 = !{!"omnipotent char", !13, i64 0}
!13 = !{!"Simple C/C++ TBAA"}
!14 = distinct !DISubprogram(name: "clone_me", linkageName: "clone_me.avx2.0", scope: !1, file: !1, line: 1, type: !15, scopeLine: 1, flags: DIFlagPrototyped | DIFlagAllCallsDescribed, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0, retainedNodes: !18, keyInstructions: true)
!15 = !DISubroutineType(types: !16)
!16 = !{!17, !17}
!17 = !DIBasicType(name: "int", size: 32, encoding: DW_ATE_signed)
!18 = !{!19}
!19 = !DILocalVariable(name: "x", arg: 1, scope: !14, file: !1, line: 1, type: !17)
!20 = !DILocation(line: 0, scope: !14)
!21 = !DILocation(line: 1, column: 81, scope: !14, atomGroup: 1, atomRank: 2)
!22 = !DILocation(line: 1, column: 72, scope: !14, atomGroup: 1, atomRank: 1)
!23 = distinct !DISubprogram(name: "clone_me", linkageName: "clone_me.default.1", scope: !1, file: !1, line: 1, type: !15, scopeLine: 1, flags: DIFlagPrototyped | DIFlagAllCallsDescribed, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0, retainedNodes: !24, keyInstructions: true)
!24 = !{!25}
!25 = !DILocalVariable(name: "x", arg: 1, scope: !23, file: !1, line: 1, type: !17)
!26 = !DILocation(line: 0, scope: !23)
!27 = !DILocation(line: 1, column: 81, scope: !23, atomGroup: 1, atomRank: 2)
!28 = !DILocation(line: 1, column: 72, scope: !23, atomGroup: 1, atomRank: 1)
!29 = distinct !DISubprogram(name: "use_clone", scope: !1, file: !1, line: 2, type: !15, scopeLine: 2, flags: DIFlagPrototyped | DIFlagAllCallsDescribed, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0, retainedNodes: !30, keyInstructions: true)
!30 = !{!31}
!31 = !DILocalVariable(name: "x", arg: 1, scope: !29, file: !1, line: 2, type: !17)
!32 = !DILocation(line: 0, scope: !29)
!33 = !DILocation(line: 2, column: 31, scope: !29)
!34 = !DILocation(line: 2, column: 43, scope: !29, atomGroup: 1, atomRank: 2)
!35 = !DILocation(line: 2, column: 24, scope: !29, atomGroup: 1, atomRank: 1)
!36 = distinct !DISubprogram(name: "plain", scope: !1, file: !1, line: 3, type: !15, scopeLine: 3, flags: DIFlagPrototyped | DIFlagAllCallsDescribed, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0, retainedNodes: !37, keyInstructions: true)
!37 = !{!38}
!38 = !DILocalVariable(name: "x", arg: 1, scope: !36, file: !1, line: 3, type: !17)
!39 = !DILocation(line: 0, scope: !36)
!40 = !DILocation(line: 3, column: 29, scope: !36, atomGroup: 1, atomRank: 2)
!41 = !DILocation(line: 3, column: 20, scope: !36, atomGroup: 1, atomRank: 1)
