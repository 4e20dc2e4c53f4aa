# The functions an NVIDIA image may leave undefined for the CUDA driver
# (core/check.cpp supplied_at_load), derived at configure time from the CUDA
# toolkit found here (cuda_driver_symbols.py: its headers, libcudadevrt and
# nvlink) into generated/kiln_cuda_driver_symbols.inc. Without a toolkit, or
# if the derivation fails, the committed src/core/cuda_driver_symbols.inc
# (the same script's output for the toolkit it names) stands in.

# Where the compiler looks at run time (codegen/ptxas.cpp): $CUDA_HOME, then
# /usr/local/cuda, then the prefix of a ptxas on the PATH.
set(_kiln_cuda_default /usr/local/cuda)
if(DEFINED ENV{CUDA_HOME} AND NOT "$ENV{CUDA_HOME}" STREQUAL "")
  set(_kiln_cuda_default $ENV{CUDA_HOME})
elseif(NOT EXISTS /usr/local/cuda/bin/ptxas)
  find_program(_kiln_ptxas_on_path ptxas NO_CACHE)
  if(_kiln_ptxas_on_path)
    get_filename_component(_kiln_cuda_default ${_kiln_ptxas_on_path} DIRECTORY)
    get_filename_component(_kiln_cuda_default ${_kiln_cuda_default} DIRECTORY)
  endif()
endif()
set(KILN_CUDA_TOOLKIT ${_kiln_cuda_default} CACHE PATH
    "CUDA toolkit whose headers, libcudadevrt and nvlink give the driver's own device functions")

set(KILN_CUDA_DRIVER_SYMBOLS ${CMAKE_BINARY_DIR}/generated/kiln_cuda_driver_symbols.inc)
set(_kiln_committed ${CMAKE_SOURCE_DIR}/src/core/cuda_driver_symbols.inc)
set(_kiln_script ${CMAKE_SOURCE_DIR}/cmake/cuda_driver_symbols.py)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_kiln_script} ${_kiln_committed})
find_package(Python3 QUIET COMPONENTS Interpreter)

set(_kiln_derived FALSE)
if(EXISTS ${KILN_CUDA_TOOLKIT}/include/cuda_device_runtime_api.h AND Python3_Interpreter_FOUND)
  execute_process(
    COMMAND ${Python3_EXECUTABLE} ${_kiln_script} --cuda ${KILN_CUDA_TOOLKIT}
            --out ${KILN_CUDA_DRIVER_SYMBOLS}
    RESULT_VARIABLE _kiln_rc ERROR_VARIABLE _kiln_err OUTPUT_QUIET)
  if(_kiln_rc EQUAL 0)
    set(_kiln_derived TRUE)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
                 ${KILN_CUDA_TOOLKIT}/include/cuda_device_runtime_api.h)
    message(STATUS "Kiln: the CUDA driver's device functions from ${KILN_CUDA_TOOLKIT}")
  else()
    string(STRIP "${_kiln_err}" _kiln_err)
    message(STATUS "Kiln: the CUDA driver's device functions from the committed list "
                   "(${_kiln_err})")
  endif()
else()
  message(STATUS "Kiln: the CUDA driver's device functions from the committed list "
                 "(no CUDA toolkit in ${KILN_CUDA_TOOLKIT}, or no Python)")
endif()
if(NOT _kiln_derived)
  configure_file(${_kiln_committed} ${KILN_CUDA_DRIVER_SYMBOLS} COPYONLY)
endif()
