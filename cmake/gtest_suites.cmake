# Run at build time by tiercache_discover_tests (TiercacheTests.cmake):
# lists EXE's GoogleTest suites and writes OUT, a CTest file with one test
# per suite. -D EXE=<test binary> -D OUT=<file to write>
execute_process(COMMAND "${EXE}" --gtest_list_tests
  OUTPUT_VARIABLE listing ERROR_VARIABLE errors RESULT_VARIABLE rc TIMEOUT 60)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${EXE} --gtest_list_tests failed (${rc}): ${errors}")
endif()
string(REPLACE "\n" ";" lines "${listing}")
set(content "")
set(count 0)
foreach(line IN LISTS lines)
  # Suite lines start in column one and end in '.', before an optional
  # "  # TypeParam = ..." comment; test lines are indented.
  if(line MATCHES "^([^ #][^ ]*)\\.( .*)?$")
    set(suite "${CMAKE_MATCH_1}")
    string(APPEND content
      "add_test([==[${suite}]==] [==[${EXE}]==] [==[--gtest_filter=${suite}.*]==])\n"
      "set_tests_properties([==[${suite}]==] PROPERTIES TIMEOUT 1800\n"
      "  FAIL_REGULAR_EXPRESSION [==[Running 0 tests from]==])\n")
    math(EXPR count "${count} + 1")
  endif()
endforeach()
if(count EQUAL 0)
  message(FATAL_ERROR "${EXE} --gtest_list_tests listed no suite")
endif()
file(WRITE "${OUT}" "${content}")
