; ModuleID = 'extract_edges.cpp'
source_filename = "extract_edges.cpp"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

%struct.Box = type { i32 }

$_ZN3BoxD2Ev = comdat any

@counter = dso_local local_unnamed_addr global i32 0, align 4, !dbg !0
@global_box = dso_local global %struct.Box zeroinitializer, align 4, !dbg !17
@__dso_handle = external hidden global i8
@llvm.global_ctors = appending global [1 x { i32, ptr, ptr }] [{ i32, ptr, ptr } { i32 65535, ptr @_GLOBAL__sub_I_extract_edges.cpp, ptr null }]

@aliased = dso_local alias i32 (i32), ptr @aliased_impl

; Function Attrs: mustprogress nounwind uwtable
define linkonce_odr dso_local void @_ZN3BoxD2Ev(ptr noundef nonnull align 4 dereferenceable(4) %0) unnamed_addr #0 comdat align 2 !dbg !40 {
    #dbg_value(ptr %0, !42, !DIExpression(), !44)
  %2 = load i32, ptr @counter, align 4, !dbg !45, !tbaa !36
  %3 = add nsw i32 %2, -1, !dbg !47
  store i32 %3, ptr @counter, align 4, !dbg !48, !tbaa !36
  ret void, !dbg !49
}

; Function Attrs: nofree nounwind
declare i32 @__cxa_atexit(ptr, ptr, ptr) local_unnamed_addr #1

; Function Attrs: mustprogress nofree norecurse nosync nounwind willreturn memory(readwrite, argmem: none, inaccessiblemem: none, target_mem0: none, target_mem1: none) uwtable
define dso_local range(i32 -2147483642, -2147483648) i32 @use_template() local_unnamed_addr #2 !dbg !50 {
  %1 = load i32, ptr @counter, align 4, !dbg !53, !tbaa !36
    #dbg_value(i32 3, !58, !DIExpression(), !65)
  %2 = add nsw i32 %1, 1, !dbg !67
  store i32 %2, ptr @counter, align 4, !dbg !68, !tbaa !36
  %3 = add nsw i32 %1, 6, !dbg !69
  ret i32 %3, !dbg !70
}

; Function Attrs: mustprogress nofree norecurse nosync nounwind willreturn memory(readwrite, argmem: none, inaccessiblemem: none, target_mem0: none, target_mem1: none) uwtable
define dso_local noundef double @use_double(double noundef %0) local_unnamed_addr #2 !dbg !71 {
    #dbg_value(double %0, !76, !DIExpression(), !77)
    #dbg_value(double %0, !78, !DIExpression(), !83)
  %2 = load i32, ptr @counter, align 4, !dbg !85, !tbaa !36
  %3 = add nsw i32 %2, 1, !dbg !86
  store i32 %3, ptr @counter, align 4, !dbg !87, !tbaa !36
  %4 = fadd double %0, %0, !dbg !88
  %5 = fadd double %4, 3.000000e+00, !dbg !89
  ret double %5, !dbg !90
}

; Function Attrs: mustprogress nofree norecurse nosync nounwind willreturn memory(readwrite, argmem: none, inaccessiblemem: none, target_mem0: none, target_mem1: none) uwtable
define dso_local range(i32 -2147483646, -2147483648) i32 @other(i32 noundef %0) local_unnamed_addr #2 !dbg !91 {
    #dbg_value(ptr poison, !42, !DIExpression(DW_OP_LLVM_fragment, 0, 32), !95)
    #dbg_value(ptr poison, !97, !DIExpression(DW_OP_LLVM_fragment, 0, 32), !101)
    #dbg_value(i32 %0, !93, !DIExpression(), !103)
    #dbg_value(ptr undef, !97, !DIExpression(), !101)
    #dbg_value(i32 %0, !100, !DIExpression(), !101)
    #dbg_value(i32 %0, !94, !DIExpression(), !103)
  %2 = load i32, ptr @counter, align 4, !dbg !104, !tbaa !36
  %3 = add nsw i32 %0, 2, !dbg !106
    #dbg_value(ptr undef, !42, !DIExpression(), !95)
  %4 = add i32 %0, -1, !dbg !107
  %5 = add i32 %4, %2, !dbg !108
  store i32 %5, ptr @counter, align 4, !dbg !109, !tbaa !36
  ret i32 %3, !dbg !110
}

; Function Attrs: mustprogress nofree norecurse nosync nounwind willreturn memory(none) uwtable
define dso_local i32 @aliased_impl(i32 noundef %0) #3 !dbg !111 {
    #dbg_value(i32 %0, !113, !DIExpression(), !114)
  %2 = mul nsw i32 %0, 3, !dbg !115
  ret i32 %2, !dbg !116
}

; Function Attrs: mustprogress nofree norecurse nosync nounwind willreturn memory(none) uwtable
define dso_local range(i32 -2147483647, -2147483648) i32 @calls_alias(i32 noundef %0) local_unnamed_addr #3 !dbg !117 {
    #dbg_value(i32 %0, !119, !DIExpression(), !120)
    #dbg_value(i32 %0, !113, !DIExpression(), !121)
  %2 = mul nsw i32 %0, 3, !dbg !123
  %3 = add nsw i32 %2, 1, !dbg !124
  ret i32 %3, !dbg !125
}

; Function Attrs: nofree nounwind uwtable
define internal void @_GLOBAL__sub_I_extract_edges.cpp() #4 section ".text.startup" !dbg !126 {
    #dbg_value(ptr @global_box, !97, !DIExpression(), !129)
    #dbg_value(i32 7, !100, !DIExpression(), !129)
  store i32 7, ptr @global_box, align 4, !dbg !135, !tbaa !136
  %1 = load i32, ptr @counter, align 4, !dbg !138, !tbaa !36
  %2 = add nsw i32 %1, 7, !dbg !139
  store i32 %2, ptr @counter, align 4, !dbg !140, !tbaa !36
  %3 = tail call i32 @__cxa_atexit(ptr nonnull @_ZN3BoxD2Ev, ptr nonnull @global_box, ptr nonnull @__dso_handle) #5, !dbg !141
  ret void
}

attributes #0 = { mustprogress nounwind uwtable "min-legal-vector-width"="0" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cmov,+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "tune-cpu"="generic" }
attributes #1 = { nofree nounwind }
attributes #2 = { mustprogress nofree norecurse nosync nounwind willreturn memory(readwrite, argmem: none, inaccessiblemem: none, target_mem0: none, target_mem1: none) uwtable "min-legal-vector-width"="0" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cmov,+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "tune-cpu"="generic" }
attributes #3 = { mustprogress nofree norecurse nosync nounwind willreturn memory(none) uwtable "min-legal-vector-width"="0" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cmov,+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "tune-cpu"="generic" }
attributes #4 = { nofree nounwind uwtable "min-legal-vector-width"="0" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cmov,+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "tune-cpu"="generic" }
attributes #5 = { nounwind }

!llvm.dbg.cu = !{!2}
!llvm.module.flags = !{!28, !29, !30, !31, !32, !33, !34}
!llvm.ident = !{!35}
!llvm.errno.tbaa = !{!36}

!0 = !DIGlobalVariableExpression(var: !1, expr: !DIExpression())
!1 = distinct !DIGlobalVariable(name: "counter", scope: !2, file: !3, line: 4, type: !8, isLocal: false, isDefinition: true)
!2 = distinct !DICompileUnit(language: DW_LANG_C_plus_plus_14, file: !3, producer: "Debian clang version 22.1.8 (1~deb12u1)", isOptimized: true, runtimeVersion: 0, emissionKind: FullDebug, retainedTypes: !4, globals: !16, splitDebugInlining: false, nameTableKind: None)
!3 = !DIFile(filename: "extract_edges.cpp", directory: ".", checksumkind: CSK_MD5, checksum: "0a72254c53c564a981f9d39a1d17188f")
!4 = !{!5}
!5 = distinct !DICompositeType(tag: DW_TAG_structure_type, name: "Box", file: !3, line: 9, size: 32, flags: DIFlagTypePassByReference | DIFlagNonTrivial, elements: !6, identifier: "_ZTS3Box")
!6 = !{!7, !9, !13}
!7 = !DIDerivedType(tag: DW_TAG_member, name: "v", scope: !5, file: !3, line: 9, baseType: !8, size: 32)
!8 = !DIBasicType(name: "int", size: 32, encoding: DW_ATE_signed)
!9 = !DISubprogram(name: "Box", linkageName: "_ZN3BoxC4Ei", scope: !5, file: !3, line: 9, type: !10, scopeLine: 9, flags: DIFlagPrototyped, spFlags: DISPFlagOptimized)
!10 = !DISubroutineType(types: !11)
!11 = !{null, !12, !8}
!12 = !DIDerivedType(tag: DW_TAG_pointer_type, baseType: !5, size: 64, flags: DIFlagArtificial | DIFlagObjectPointer)
!13 = !DISubprogram(name: "~Box", linkageName: "_ZN3BoxD4Ev", scope: !5, file: !3, line: 9, type: !14, scopeLine: 9, flags: DIFlagPrototyped, spFlags: DISPFlagOptimized)
!14 = !DISubroutineType(types: !15)
!15 = !{null, !12}
!16 = !{!0, !17, !19, !23}
!17 = !DIGlobalVariableExpression(var: !18, expr: !DIExpression())
!18 = distinct !DIGlobalVariable(name: "global_box", scope: !2, file: !3, line: 10, type: !5, isLocal: false, isDefinition: true)
!19 = !DIGlobalVariableExpression(var: !20, expr: !DIExpression())
!20 = distinct !DIGlobalVariable(name: "table_ptr", scope: !2, file: !3, line: 6, type: !21, isLocal: true, isDefinition: true)
!21 = !DIDerivedType(tag: DW_TAG_const_type, baseType: !22)
!22 = !DIDerivedType(tag: DW_TAG_pointer_type, baseType: !8, size: 64)
!23 = !DIGlobalVariableExpression(var: !24, expr: !DIExpression())
!24 = distinct !DIGlobalVariable(name: "hidden", linkageName: "_ZL6hidden", scope: !2, file: !3, line: 5, type: !25, isLocal: true, isDefinition: true)
!25 = !DICompositeType(tag: DW_TAG_array_type, baseType: !8, size: 128, elements: !26)
!26 = !{!27}
!27 = !DISubrange(count: 4)
!28 = !{i32 7, !"Dwarf Version", i32 5}
!29 = !{i32 2, !"Debug Info Version", i32 3}
!30 = !{i32 1, !"wchar_size", i32 4}
!31 = !{i32 8, !"PIC Level", i32 2}
!32 = !{i32 7, !"PIE Level", i32 2}
!33 = !{i32 7, !"uwtable", i32 2}
!34 = !{i32 7, !"debug-info-assignment-tracking", i1 true}
!35 = !{!"Debian clang version 22.1.8 (1~deb12u1)"}
!36 = !{!37, !37, i64 0}
!37 = !{!"int", !38, i64 0}
!38 = !{!"omnipotent char", !39, i64 0}
!39 = !{!"Simple C++ TBAA"}
!40 = distinct !DISubprogram(name: "~Box", linkageName: "_ZN3BoxD2Ev", scope: !5, file: !3, line: 9, type: !14, scopeLine: 9, flags: DIFlagPrototyped | DIFlagAllCallsDescribed, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !2, declaration: !13, retainedNodes: !41, keyInstructions: true)
!41 = !{!42}
!42 = !DILocalVariable(name: "this", arg: 1, scope: !40, type: !43, flags: DIFlagArtificial | DIFlagObjectPointer)
!43 = !DIDerivedType(tag: DW_TAG_pointer_type, baseType: !5, size: 64)
!44 = !DILocation(line: 0, scope: !40)
!45 = !DILocation(line: 9, column: 73, scope: !46)
!46 = distinct !DILexicalBlock(scope: !40, file: !3, line: 9, column: 64)
!47 = !DILocation(line: 9, column: 73, scope: !46, atomGroup: 1, atomRank: 2)
!48 = !DILocation(line: 9, column: 73, scope: !46, atomGroup: 1, atomRank: 1)
!49 = !DILocation(line: 9, column: 77, scope: !40, atomGroup: 2, atomRank: 1)
!50 = distinct !DISubprogram(name: "use_template", scope: !3, file: !3, line: 11, type: !51, scopeLine: 11, flags: DIFlagPrototyped | DIFlagAllCallsDescribed, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !2, keyInstructions: true)
!51 = !DISubroutineType(types: !52)
!52 = !{!8}
!53 = !DILocation(line: 7, column: 42, scope: !54, inlinedAt: !57, atomGroup: 1, atomRank: 2)
!54 = distinct !DISubprogram(name: "read_it<&counter>", linkageName: "_Z7read_itIXadL_Z7counterEEEiv", scope: !3, file: !3, line: 7, type: !51, scopeLine: 7, flags: DIFlagPrototyped | DIFlagAllCallsDescribed, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !2, templateParams: !55, keyInstructions: true)
!55 = !{!56}
!56 = !DITemplateValueParameter(name: "P", type: !22, value: ptr @counter)
!57 = distinct !DILocation(line: 11, column: 40, scope: !50)
!58 = !DILocalVariable(name: "x", arg: 1, scope: !59, file: !3, line: 8, type: !8)
!59 = distinct !DISubprogram(name: "twice<int>", linkageName: "_Z5twiceIiET_S0_", scope: !3, file: !3, line: 8, type: !60, scopeLine: 8, flags: DIFlagPrototyped | DIFlagAllCallsDescribed, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !2, templateParams: !63, retainedNodes: !62, keyInstructions: true)
!60 = !DISubroutineType(types: !61)
!61 = !{!8, !8}
!62 = !{!58}
!63 = !{!64}
!64 = !DITemplateTypeParameter(name: "T", type: !8)
!65 = !DILocation(line: 0, scope: !59, inlinedAt: !66)
!66 = distinct !DILocation(line: 11, column: 62, scope: !50)
!67 = !DILocation(line: 8, column: 45, scope: !59, inlinedAt: !66, atomGroup: 1, atomRank: 2)
!68 = !DILocation(line: 8, column: 45, scope: !59, inlinedAt: !66, atomGroup: 1, atomRank: 1)
!69 = !DILocation(line: 11, column: 60, scope: !50, atomGroup: 2, atomRank: 2)
!70 = !DILocation(line: 11, column: 33, scope: !50, atomGroup: 2, atomRank: 1)
!71 = distinct !DISubprogram(name: "use_double", scope: !3, file: !3, line: 12, type: !72, scopeLine: 12, flags: DIFlagPrototyped | DIFlagAllCallsDescribed, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !2, retainedNodes: !75, keyInstructions: true)
!72 = !DISubroutineType(types: !73)
!73 = !{!74, !74}
!74 = !DIBasicType(name: "double", size: 64, encoding: DW_ATE_float)
!75 = !{!76}
!76 = !DILocalVariable(name: "d", arg: 1, scope: !71, file: !3, line: 12, type: !74)
!77 = !DILocation(line: 0, scope: !71)
!78 = !DILocalVariable(name: "x", arg: 1, scope: !79, file: !3, line: 8, type: !74)
!79 = distinct !DISubprogram(name: "twice<double>", linkageName: "_Z5twiceIdET_S0_", scope: !3, file: !3, line: 8, type: !72, scopeLine: 8, flags: DIFlagPrototyped | DIFlagAllCallsDescribed, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !2, templateParams: !81, retainedNodes: !80, keyInstructions: true)
!80 = !{!78}
!81 = !{!82}
!82 = !DITemplateTypeParameter(name: "T", type: !74)
!83 = !DILocation(line: 0, scope: !79, inlinedAt: !84)
!84 = distinct !DILocation(line: 12, column: 49, scope: !71)
!85 = !DILocation(line: 8, column: 45, scope: !79, inlinedAt: !84)
!86 = !DILocation(line: 8, column: 45, scope: !79, inlinedAt: !84, atomGroup: 1, atomRank: 2)
!87 = !DILocation(line: 8, column: 45, scope: !79, inlinedAt: !84, atomGroup: 1, atomRank: 1)
!88 = !DILocation(line: 8, column: 58, scope: !79, inlinedAt: !84, atomGroup: 2, atomRank: 2)
!89 = !DILocation(line: 12, column: 58, scope: !71, atomGroup: 1, atomRank: 2)
!90 = !DILocation(line: 12, column: 42, scope: !71, atomGroup: 1, atomRank: 1)
!91 = distinct !DISubprogram(name: "other", scope: !3, file: !3, line: 13, type: !60, scopeLine: 13, flags: DIFlagPrototyped | DIFlagAllCallsDescribed, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !2, retainedNodes: !92, keyInstructions: true)
!92 = !{!93, !94}
!93 = !DILocalVariable(name: "x", arg: 1, scope: !91, file: !3, line: 13, type: !8)
!94 = !DILocalVariable(name: "b", scope: !91, file: !3, line: 13, type: !5)
!95 = !DILocation(line: 0, scope: !40, inlinedAt: !96)
!96 = distinct !DILocation(line: 13, column: 66, scope: !91)
!97 = !DILocalVariable(name: "this", arg: 1, scope: !98, type: !43, flags: DIFlagArtificial | DIFlagObjectPointer)
!98 = distinct !DISubprogram(name: "Box", linkageName: "_ZN3BoxC2Ei", scope: !5, file: !3, line: 9, type: !10, scopeLine: 9, flags: DIFlagPrototyped | DIFlagAllCallsDescribed, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !2, declaration: !9, retainedNodes: !99, keyInstructions: true)
!99 = !{!97, !100}
!100 = !DILocalVariable(name: "x", arg: 2, scope: !98, file: !3, line: 9, type: !8)
!101 = !DILocation(line: 0, scope: !98, inlinedAt: !102)
!102 = distinct !DILocation(line: 13, column: 35, scope: !91)
!103 = !DILocation(line: 0, scope: !91)
!104 = !DILocation(line: 9, column: 49, scope: !105, inlinedAt: !102)
!105 = distinct !DILexicalBlock(scope: !98, file: !3, line: 9, column: 39)
!106 = !DILocation(line: 13, column: 52, scope: !91, atomGroup: 2, atomRank: 2)
!107 = !DILocation(line: 9, column: 49, scope: !105, inlinedAt: !102, atomGroup: 2, atomRank: 2)
!108 = !DILocation(line: 9, column: 73, scope: !46, inlinedAt: !96, atomGroup: 1, atomRank: 2)
!109 = !DILocation(line: 9, column: 73, scope: !46, inlinedAt: !96, atomGroup: 1, atomRank: 1)
!110 = !DILocation(line: 13, column: 66, scope: !91, atomGroup: 2, atomRank: 1)
!111 = distinct !DISubprogram(name: "aliased_impl", scope: !3, file: !3, line: 14, type: !60, scopeLine: 14, flags: DIFlagPrototyped | DIFlagAllCallsDescribed, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !2, retainedNodes: !112, keyInstructions: true)
!112 = !{!113}
!113 = !DILocalVariable(name: "x", arg: 1, scope: !111, file: !3, line: 14, type: !8)
!114 = !DILocation(line: 0, scope: !111)
!115 = !DILocation(line: 14, column: 47, scope: !111, atomGroup: 1, atomRank: 2)
!116 = !DILocation(line: 14, column: 38, scope: !111, atomGroup: 1, atomRank: 1)
!117 = distinct !DISubprogram(name: "calls_alias", scope: !3, file: !3, line: 16, type: !60, scopeLine: 16, flags: DIFlagPrototyped | DIFlagAllCallsDescribed, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !2, retainedNodes: !118, keyInstructions: true)
!118 = !{!119}
!119 = !DILocalVariable(name: "x", arg: 1, scope: !117, file: !3, line: 16, type: !8)
!120 = !DILocation(line: 0, scope: !117)
!121 = !DILocation(line: 0, scope: !111, inlinedAt: !122)
!122 = distinct !DILocation(line: 16, column: 44, scope: !117)
!123 = !DILocation(line: 14, column: 47, scope: !111, inlinedAt: !122, atomGroup: 1, atomRank: 2)
!124 = !DILocation(line: 16, column: 55, scope: !117, atomGroup: 1, atomRank: 2)
!125 = !DILocation(line: 16, column: 37, scope: !117, atomGroup: 1, atomRank: 1)
!126 = distinct !DISubprogram(linkageName: "_GLOBAL__sub_I_extract_edges.cpp", scope: !3, file: !3, type: !127, flags: DIFlagArtificial | DIFlagAllCallsDescribed, spFlags: DISPFlagLocalToUnit | DISPFlagDefinition | DISPFlagOptimized, unit: !2, keyInstructions: true)
!127 = !DISubroutineType(types: !128)
!128 = !{}
!129 = !DILocation(line: 0, scope: !98, inlinedAt: !130)
!130 = distinct !DILocation(line: 10, column: 5, scope: !131, inlinedAt: !134)
!131 = distinct !DISubprogram(name: "__cxx_global_var_init", scope: !3, file: !3, type: !132, flags: DIFlagArtificial | DIFlagAllCallsDescribed, spFlags: DISPFlagLocalToUnit | DISPFlagDefinition | DISPFlagOptimized, unit: !2, keyInstructions: true)
!132 = !DISubroutineType(types: !133)
!133 = !{null}
!134 = distinct !DILocation(line: 0, scope: !126)
!135 = !DILocation(line: 9, column: 34, scope: !98, inlinedAt: !130, atomGroup: 1, atomRank: 1)
!136 = !{!137, !37, i64 0}
!137 = !{!"_ZTS3Box", !37, i64 0}
!138 = !DILocation(line: 9, column: 49, scope: !105, inlinedAt: !130)
!139 = !DILocation(line: 9, column: 49, scope: !105, inlinedAt: !130, atomGroup: 2, atomRank: 2)
!140 = !DILocation(line: 9, column: 49, scope: !105, inlinedAt: !130, atomGroup: 2, atomRank: 1)
!141 = !DILocation(line: 0, scope: !131, inlinedAt: !134)
