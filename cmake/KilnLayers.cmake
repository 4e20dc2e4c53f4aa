# Kiln's layers as build targets. Each layer under src/<name>/ is an OBJECT
# library that sees only its own headers and those of the layers it declares:
# every layer's headers are reached through a directory of its own in the
# build tree (layers/<name>/<name> -> src/<name>), and a target's include path
# holds only its own and its dependencies' directories. An include of a layer
# not declared below fails to compile; tests/layers/check_layers.py checks the
# same rules on the sources (and that the loader's layers use no LLVM).
#
# kiln_layer(NAME DEPENDS <layers...> [LLVM] SOURCES <files...>
#            [LIBS <libraries...>] [DEFINITIONS <defs...>])

function(kiln_layer name)
  cmake_parse_arguments(L "LLVM" "" "SOURCES;DEPENDS;LIBS;DEFINITIONS" ${ARGN})
  set(stage ${CMAKE_BINARY_DIR}/layers/${name})
  file(MAKE_DIRECTORY ${stage})
  file(CREATE_LINK ${CMAKE_SOURCE_DIR}/src/${name} ${stage}/${name} SYMBOLIC)

  add_library(kiln_${name}_headers INTERFACE)
  target_include_directories(kiln_${name}_headers INTERFACE ${stage} ${CMAKE_SOURCE_DIR}/include)
  foreach(dep IN LISTS L_DEPENDS)
    if(NOT TARGET kiln_${dep}_headers)
      message(FATAL_ERROR "layer ${name} depends on ${dep}, which is not declared before it")
    endif()
    target_link_libraries(kiln_${name}_headers INTERFACE kiln_${dep}_headers)
  endforeach()
  if(L_LLVM)
    target_include_directories(kiln_${name}_headers SYSTEM INTERFACE ${LLVM_INCLUDE_DIRS})
  endif()

  list(TRANSFORM L_SOURCES PREPEND ${CMAKE_SOURCE_DIR}/src/${name}/)
  add_library(kiln_${name} OBJECT ${L_SOURCES})
  target_link_libraries(kiln_${name} PRIVATE kiln_${name}_headers ${L_LIBS})
  target_compile_definitions(kiln_${name} PRIVATE ${L_DEFINITIONS})
  target_compile_options(kiln_${name} PRIVATE ${KILN_WARNINGS})
  set_property(TARGET kiln_${name} PROPERTY KILN_LLVM ${L_LLVM})

  # The declared graph, for the layer check in the test suite.
  set(llvm "")
  if(L_LLVM)
    set(llvm " [llvm]")
  endif()
  set_property(GLOBAL APPEND_STRING PROPERTY KILN_LAYER_MANIFEST "${name}: ${L_DEPENDS}${llvm}\n")
endfunction()
