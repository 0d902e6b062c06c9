# prism_cc_library(NAME SRCS ... DEPS ...): one static library per source folder. Tests sit beside
# the code as foo_test.cc and are collected into one prism_unittests binary with prism_cc_test().
function(prism_cc_library)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS" ${ARGN})
  add_library(${ARG_NAME} STATIC ${ARG_SRCS})
  target_include_directories(${ARG_NAME} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${ARG_NAME} PUBLIC ${ARG_DEPS})
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
