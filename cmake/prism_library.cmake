# prism_cc_library(NAME SRCS ... [PUBLIC_DEPS ...] [DEPS ...]): one static library per source
# folder. PUBLIC_DEPS are what the library's own headers include (its users need them too); DEPS
# are what only its sources use, linked PRIVATE. A library never depends on a folder to its right
# (docs/design.md, Layers; scripts/check_layering.py checks the includes).
# Tests sit beside the code as foo_test.cc and are collected into one prism_unittests binary with
# prism_cc_test().
function(prism_cc_library)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS;PUBLIC_DEPS" ${ARGN})
  add_library(${ARG_NAME} STATIC ${ARG_SRCS})
  target_include_directories(${ARG_NAME} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${ARG_NAME} PUBLIC ${ARG_PUBLIC_DEPS} PRIVATE ${ARG_DEPS})
endfunction()

set_property(GLOBAL PROPERTY PRISM_TEST_SOURCES "")
set_property(GLOBAL PROPERTY PRISM_TEST_DEPS "")
function(prism_cc_test)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS" ${ARGN})
  foreach(src ${ARG_SRCS})
    get_filename_component(abs ${src} ABSOLUTE)
    set_property(GLOBAL APPEND PROPERTY PRISM_TEST_SOURCES ${abs})
  endforeach()
  set_property(GLOBAL APPEND PROPERTY PRISM_TEST_DEPS ${ARG_DEPS})
endfunction()
