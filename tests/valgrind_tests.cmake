# Read by ctest, after the test files of gtest_discover_tests (CMakeLists.txt, label valgrind):
# one test per case of the hostile-emu GoogleTest binaries, valgrind/SUITE.CASE, which runs that
# case alone under valgrind's memcheck. The cases are those gtest_discover_tests listed (the
# variable NAME_TESTS its file for binary NAME sets). The names drop the emulate/ prefix, so that
# `ctest -R emulate` does not take these in.
#
# Set by the build's valgrind_tests_args.cmake: valgrind_binaries (NAME|PATH entries),
# valgrind_command (valgrind and its flags), valgrind_workdir.
foreach(entry IN LISTS valgrind_binaries)
  string(REPLACE "|" ";" fields "${entry}")
  list(GET fields 0 name)
  list(GET fields 1 binary)
  foreach(test IN LISTS ${name}_TESTS)
    string(REGEX REPLACE "^emulate/" "" case "${test}")
    add_test("valgrind/${case}" ${valgrind_command} "${binary}" "--gtest_filter=${case}")
    # A case takes seconds natively and 10 to 60 times as long under memcheck.
    set_tests_properties("valgrind/${case}" PROPERTIES LABELS valgrind TIMEOUT 1800
                         WORKING_DIRECTORY "${valgrind_workdir}" SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]")
  endforeach()
endforeach()
