# The harnesses of tests/fuzz, linked with replay_main.cpp instead of libFuzzer, in the sanitizer
# build (tests/CMakeLists.txt includes this when TRTUTILS_SANITIZE): `ctest -L fuzz` replays each
# seed corpus under ASan + UBSan with the library that build already made, so CI needs no
# second (clang) build of the library. Fuzzing itself: scripts/fuzz.sh (clang, libFuzzer).
set(TRTUTILS_FUZZ_DIR ${CMAKE_CURRENT_LIST_DIR})
file(GLOB harnesses CONFIGURE_DEPENDS ${TRTUTILS_FUZZ_DIR}/*_fuzz.cpp)
foreach(harness IN LISTS harnesses)
  get_filename_component(stem ${harness} NAME_WE)  # onnx_fuzz
  string(REGEX REPLACE "_fuzz$" "" name ${stem})
  add_executable(${stem}_replay ${harness} ${TRTUTILS_FUZZ_DIR}/replay_main.cpp)
  target_compile_options(${stem}_replay PRIVATE ${TRTUTILS_WARNINGS} -O0)
  target_include_directories(${stem}_replay PRIVATE ${TRTUTILS_INTERNAL_INCLUDE_DIR})
  target_link_libraries(${stem}_replay PRIVATE trtutils)
  if(name MATCHES "^cli")  # the CLI's parser: its sources without main()
    target_link_libraries(${stem}_replay PRIVATE trtutils_cli_objects)
  endif()
  add_test(NAME fuzz_${name} COMMAND ${stem}_replay ${TRTUTILS_FUZZ_DIR}/corpus/${name})
  set_tests_properties(fuzz_${name} PROPERTIES LABELS fuzz ENVIRONMENT UBSAN_OPTIONS=print_stacktrace=1)
endforeach()
