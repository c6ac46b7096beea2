# ctest script (cmake -P): Status and Result<T> are [[nodiscard]], so dropping
# one is a compile error under -Werror=unused-result. Compiles
# nodiscard_snippet.cpp once cleanly (every value cast to void: must pass) and
# once per misuse (must fail, and the compiler must name the dropped value).
#
# -DCXX=<compiler> -DSNIPPET=<file> -DINCLUDES=<dir|dir|...> -DSTD_FLAG=<-std=c++20>
string(REPLACE "|" ";" _dirs "${INCLUDES}")
set(_flags ${STD_FLAG} -fsyntax-only -Werror=unused-result)
foreach(d IN LISTS _dirs)
  if(d)
    list(APPEND _flags "-I${d}")
  endif()
endforeach()

execute_process(COMMAND ${CXX} ${_flags} ${SNIPPET} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the snippet with every value cast to void does not compile (a broken check, not a nodiscard diagnostic):\n${out}")
endif()

foreach(misuse DROP_STATUS DROP_RESULT DROP_RUN DROP_SELECT)
  execute_process(COMMAND ${CXX} ${_flags} -DBARACUDA_SNIPPET_${misuse} ${SNIPPET}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(rc EQUAL 0)
    message(FATAL_ERROR "${misuse}: dropping the value compiled under -Werror=unused-result; Status / Result must be [[nodiscard]]")
  endif()
  if(NOT out MATCHES "nodiscard|unused-result|unused result")
    message(FATAL_ERROR "${misuse}: the compile failed, but not with a nodiscard diagnostic:\n${out}")
  endif()
  message(STATUS "${misuse}: diagnosed")
endforeach()
