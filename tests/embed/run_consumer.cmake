# Builds examples/consumer against the installed prefix (the one whose bin/
# is $KILN_TEST_BIN_DIR) with its CMake package and pkg-config files, runs
# both programs and checks their output; and compiles the tools (TOOLS_DIR)
# with the installed headers alone on their include path, as clients of the
# public API. Skipped when KILN_TEST_BIN_DIR is
# unset: there is no installed prefix to test then.
#   cmake -DSOURCE_DIR=... -DWORK_DIR=... -DLIBDIR=... -DGENERATOR=...
#         -DC_COMPILER=... -DCXX_COMPILER=... -DTOOLS_DIR=... -P run_consumer.cmake
if(NOT DEFINED ENV{KILN_TEST_BIN_DIR} OR "$ENV{KILN_TEST_BIN_DIR}" STREQUAL "")
  message("KILN-SKIP: KILN_TEST_BIN_DIR is not set; set it to an installed prefix's bin/ "
          "(cmake --install build --prefix P; KILN_TEST_BIN_DIR=P/bin) to test the consumer")
  return()
endif()
get_filename_component(prefix "$ENV{KILN_TEST_BIN_DIR}/.." ABSOLUTE)
foreach(f ${LIBDIR}/cmake/kiln/kilnConfig.cmake ${LIBDIR}/pkgconfig/kiln.pc
          ${LIBDIR}/pkgconfig/kiln-compiler.pc include/kiln/jit.hpp include/kiln/kiln_compiler.h include/kiln/admin.hpp)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "the installed prefix ${prefix} lacks ${f}")
  endif()
endforeach()

foreach(tool kiln-inspect kiln-precompile)
  execute_process(
    COMMAND ${CXX_COMPILER} -std=c++20 -fsyntax-only -I${prefix}/include
            -DKILN_VERSION="0" -DKILN_LLVM_VERSION="0" ${TOOLS_DIR}/${tool}.cpp
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${tool} does not compile against the installed headers alone:\n${out}")
  endif()
endforeach()

set(ENV{PKG_CONFIG_PATH} "${prefix}/${LIBDIR}/pkgconfig")
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/build -G "${GENERATOR}"
          -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_C_COMPILER=${C_COMPILER}
          -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_BUILD_TYPE=Release
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring the consumer against ${prefix} failed:\n${out}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/build
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the consumer failed:\n${out}")
endif()

# The package must be the installed one, not the build tree's.
file(READ ${WORK_DIR}/build/CMakeCache.txt cache_text)
string(REGEX MATCH "kiln_DIR:PATH=([^\n]*)" _ "${cache_text}")
get_filename_component(found_dir "${CMAKE_MATCH_1}" ABSOLUTE)
get_filename_component(want_dir "${prefix}/${LIBDIR}/cmake/kiln" ABSOLUTE)
if(NOT found_dir STREQUAL want_dir)
  message(FATAL_ERROR "find_package(kiln) found ${found_dir}, not the prefix's ${want_dir}")
endif()

foreach(program consumer_cpp consumer_c)
  execute_process(COMMAND ${WORK_DIR}/build/${program} ${WORK_DIR}/${program}.db
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${program}:\n${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${program} failed (${rc})")
  endif()
  set(${program}_out "${out}")
endforeach()
foreach(want "cpp miss: sum_squares(10) = 385 (2 jobs)" "cpp hit: sum_squares(10) = 385 (2 jobs)")
  string(FIND "${consumer_cpp_out}" "${want}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "consumer_cpp did not print '${want}'")
  endif()
endforeach()
string(FIND "${consumer_c_out}" "c: sum_squares(10) = 385 (2 of 2 jobs compiled)" at)
if(at EQUAL -1)
  message(FATAL_ERROR "consumer_c did not print 'c: sum_squares(10) = 385 (2 of 2 jobs compiled)'")
endif()
file(REMOVE_RECURSE ${WORK_DIR})
