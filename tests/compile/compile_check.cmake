# ctest script (cmake -P) for compile-time properties of the public headers:
# compiles SNIPPET once as is (it must compile: the check itself is sound)
# and once per case with -DBARACUDA_SNIPPET_<case> (each must FAIL, with a
# diagnostic matching PATTERN). Syntax only, never linked.
#
# -DCXX=<compiler> -DSTD_FLAG=<-std=c++20> -DSNIPPET=<file> -DINCLUDES=<dir|dir|...>
# -DFLAGS=<flag|flag|...> -DCASES=<case|case|...> -DPATTERN=<regex>
string(REPLACE "|" ";" _dirs "${INCLUDES}")
string(REPLACE "|" ";" _extra "${FLAGS}")
string(REPLACE "|" ";" _cases "${CASES}")
set(_flags ${STD_FLAG} -fsyntax-only ${_extra})
foreach(d IN LISTS _dirs)
  if(d)
    list(APPEND _flags "-I${d}")
  endif()
endforeach()

execute_process(COMMAND ${CXX} ${_flags} ${SNIPPET} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the snippet without a misuse does not compile (a broken check, not the diagnostic under test):\n${out}")
endif()

foreach(c IN LISTS _cases)
  execute_process(COMMAND ${CXX} ${_flags} -DBARACUDA_SNIPPET_${c} ${SNIPPET}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(rc EQUAL 0)
    message(FATAL_ERROR "${c}: compiled, but must be diagnosed (${PATTERN})")
  endif()
  if(NOT out MATCHES "${PATTERN}")
    message(FATAL_ERROR "${c}: the compile failed, but not with the expected diagnostic (${PATTERN}):\n${out}")
  endif()
  message(STATUS "${c}: diagnosed")
endforeach()
