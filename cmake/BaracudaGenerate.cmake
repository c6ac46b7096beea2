# Kernel instantiations generated from a family's manifest (CMake only, at
# configure time; the output lives in the build tree, never in src/).
#
# A manifest (src/ops/<family>/manifest.cmake) is a CMake script written with
# two commands:
#
#   baracuda_kernel_set(<set>
#     COLUMNS <name>...            the fields of a row
#     [INCLUDE <header>...         headers an instantiation needs (paths under src/)
#      INSTANTIATE <line>...]      explicit instantiation(s) of one row; without
#                                  them the set is only a list for the dispatchers
#     [NAMESPACE <ns>]             the lines are emitted inside namespace <ns>
#     [EXTERN <line>...]           their extern declarations, for dispatchers that
#                                  include the kernel header
#     [FILTER <column> <option>])  keep only rows whose <column> is in the list held
#                                  by the CMake variable <option> ("all" or empty: all)
#
#   baracuda_kernels(<set> <tu> <value>...)
#     one row: one value per column, instantiated in the translation unit <tu>.cu
#     (<tu> is - for a set without INSTANTIATE)
#
# Lines are templates: @<column>@ is replaced by the row's value. A column named
# DTYPE holds a DType enumerator (F32, F64, F16, BF16, I32, I64) and also gives
# @CTYPE@, the CUDA type (float, ..., __half, __nv_bfloat16). TU names are
# lower-cased (flash_mma_fwd_${dt}_d64 with dt = BF16 -> flash_mma_fwd_bf16_d64.cu).
#
# baracuda_generate_manifest() runs the manifest and writes, under
# ${BARACUDA_GEN_DIR} (on the include path):
#   ops/<family>/cuda/<tu>.cu   one per TU: the includes and the rows' lines
#   ops/<family>/manifest.hpp   per set, the rows as an X-macro list for the
#                               dispatchers' tables and switches:
#                                 #define BARACUDA_<SET>_COUNT <rows>
#                                 #define BARACUDA_<SET>_KERNELS(X) X(<values>) ...
#                               (the columns in order, CTYPE right after
#                               DTYPE), BARACUDA_<SET>_EXTERN (the extern
#                               declarations, when EXTERN is given) and, per
#                               FILTER option, #define <OPTION>_VALUE "<list>".
# Files are rewritten only when their text changes, so a configure run
# rebuilds only the TUs whose rows changed; editing the manifest re-runs CMake.

include_guard(GLOBAL)

set(BARACUDA_GEN_DIR "${CMAKE_BINARY_DIR}/generated" CACHE INTERNAL "Generated sources and headers")

# CUDA type of a DType enumerator.
function(_baracuda_ctype dtype out)
  set(types F32 float F64 double F16 __half BF16 __nv_bfloat16 I32 int32_t I64 int64_t)
  list(FIND types "${dtype}" i)
  if(i LESS 0 OR dtype MATCHES "^[a-z_]")
    message(FATAL_ERROR "baracuda manifest: DTYPE '${dtype}' is not one of F32 F64 F16 BF16 I32 I64")
  endif()
  math(EXPR i "${i} + 1")
  list(GET types ${i} t)
  set(${out} "${t}" PARENT_SCOPE)
endfunction()

# Writes `content` to `path` unless the file already holds exactly that.
function(_baracuda_write_if_changed path content)
  if(EXISTS "${path}")
    file(READ "${path}" old)
    if(old STREQUAL content)
      return()
    endif()
  endif()
  file(WRITE "${path}" "${content}")
endfunction()

function(baracuda_kernel_set set)
  cmake_parse_arguments(PARSE_ARGV 1 K "" "NAMESPACE" "INCLUDE;COLUMNS;INSTANTIATE;EXTERN;FILTER" )
  get_property(family GLOBAL PROPERTY _BARACUDA_GEN_FAMILY)
  if(NOT family)
    message(FATAL_ERROR "baracuda_kernel_set(${set}): only inside a manifest (baracuda_generate_manifest)")
  endif()
  if(K_UNPARSED_ARGUMENTS OR NOT K_COLUMNS OR (K_INCLUDE AND NOT K_INSTANTIATE) OR (K_INSTANTIATE AND NOT K_INCLUDE))
    message(FATAL_ERROR "baracuda_kernel_set(${set}): needs COLUMNS, and INCLUDE with INSTANTIATE (got ${ARGN})")
  endif()
  foreach(c IN LISTS K_COLUMNS)
    # Upper case: the row's values become variables of that name, next to the
    # generator's own (lower-case) ones.
    if(NOT c MATCHES "^[A-Z][A-Z0-9_]*$" OR c STREQUAL "CTYPE")
      message(FATAL_ERROR "baracuda_kernel_set(${set}): column '${c}' must be UPPER_CASE and not CTYPE")
    endif()
  endforeach()
  get_property(sets GLOBAL PROPERTY _BARACUDA_GEN_SETS)
  if(set IN_LIST sets)
    message(FATAL_ERROR "baracuda_kernel_set(${set}): declared twice")
  endif()
  set_property(GLOBAL APPEND PROPERTY _BARACUDA_GEN_SETS ${set})
  foreach(key INCLUDE NAMESPACE COLUMNS INSTANTIATE EXTERN)
    set_property(GLOBAL PROPERTY _BARACUDA_SET_${set}_${key} "${K_${key}}")
  endforeach()
  set_property(GLOBAL PROPERTY _BARACUDA_SET_${set}_ROWS "")
  set_property(GLOBAL PROPERTY _BARACUDA_SET_${set}_FILTER "")
  if(K_FILTER)
    list(LENGTH K_FILTER n)
    list(GET K_FILTER 0 column)
    if(NOT n EQUAL 2 OR NOT column IN_LIST K_COLUMNS)
      message(FATAL_ERROR "baracuda_kernel_set(${set}): FILTER takes a column and an option name")
    endif()
    set_property(GLOBAL PROPERTY _BARACUDA_SET_${set}_FILTER "${K_FILTER}")
    list(GET K_FILTER 1 option)
    set_property(GLOBAL APPEND PROPERTY _BARACUDA_GEN_OPTIONS ${option})
  endif()
endfunction()

function(baracuda_kernels set tu)
  get_property(sets GLOBAL PROPERTY _BARACUDA_GEN_SETS)
  if(NOT set IN_LIST sets)
    message(FATAL_ERROR "baracuda_kernels(${set} ...): no such baracuda_kernel_set")
  endif()
  get_property(columns GLOBAL PROPERTY _BARACUDA_SET_${set}_COLUMNS)
  list(LENGTH columns ncol)
  list(LENGTH ARGN nval)
  if(NOT ncol EQUAL nval)
    message(FATAL_ERROR "baracuda_kernels(${set} ${tu} ${ARGN}): ${nval} values for the ${ncol} columns ${columns}")
  endif()
  # The row's values as variables, for @column@ in the line templates.
  set(i 0)
  foreach(c IN LISTS columns)
    list(GET ARGN ${i} ${c})
    math(EXPR i "${i} + 1")
  endforeach()
  # Filtered out: the value is not in the option's list.
  get_property(filter GLOBAL PROPERTY _BARACUDA_SET_${set}_FILTER)
  if(filter)
    list(GET filter 0 fcol)
    list(GET filter 1 option)
    set(keep "${${option}}")
    if(keep AND NOT keep STREQUAL "all" AND NOT "${${fcol}}" IN_LIST keep)
      return()
    endif()
    set_property(GLOBAL APPEND PROPERTY _BARACUDA_OPTION_${option}_HITS "${${fcol}}")
  endif()
  set(xargs "${ARGN}")
  if("DTYPE" IN_LIST columns)
    _baracuda_ctype("${DTYPE}" CTYPE)
    list(FIND columns DTYPE d)
    math(EXPR d "${d} + 1")
    list(INSERT xargs ${d} "${CTYPE}")
  endif()
  list(JOIN xargs ", " xrow)
  set_property(GLOBAL APPEND PROPERTY _BARACUDA_SET_${set}_ROWS "X(${xrow})")

  get_property(lines GLOBAL PROPERTY _BARACUDA_SET_${set}_INSTANTIATE)
  if(NOT lines OR tu STREQUAL "-")
    if(lines OR NOT tu STREQUAL "-")
      message(FATAL_ERROR "baracuda_kernels(${set} ${tu} ...): the TU is - exactly when the set has no INSTANTIATE")
    endif()
    return()
  endif()
  string(TOLOWER "${tu}" tu)
  get_property(tus GLOBAL PROPERTY _BARACUDA_GEN_TUS)
  if(NOT tu IN_LIST tus)
    set_property(GLOBAL APPEND PROPERTY _BARACUDA_GEN_TUS ${tu})
  endif()
  get_property(includes GLOBAL PROPERTY _BARACUDA_SET_${set}_INCLUDE)
  set_property(GLOBAL APPEND PROPERTY _BARACUDA_TU_${tu}_INCLUDES ${includes})
  get_property(ns GLOBAL PROPERTY _BARACUDA_SET_${set}_NAMESPACE)
  foreach(kind INSTANTIATE EXTERN)
    get_property(lines GLOBAL PROPERTY _BARACUDA_SET_${set}_${kind})
    foreach(line IN LISTS lines)
      string(REGEX MATCHALL "@[A-Za-z0-9_]+@" refs "${line}")
      foreach(ref IN LISTS refs)
        string(REPLACE "@" "" ref "${ref}")
        if(NOT ref IN_LIST columns AND NOT (ref STREQUAL "CTYPE" AND "DTYPE" IN_LIST columns))
          message(FATAL_ERROR "baracuda_kernel_set(${set}): @${ref}@ is not a column (columns: ${columns})")
        endif()
      endforeach()
      string(CONFIGURE "${line}" text @ONLY)
      # Lines hold ';': escape it, or the property list would split them.
      string(REPLACE ";" "\\;" text "${text}")
      if(kind STREQUAL "INSTANTIATE")
        # One TU line: "<namespace>|<text>" (namespaces never hold '|').
        set_property(GLOBAL APPEND PROPERTY _BARACUDA_TU_${tu}_LINES "${ns}|${text}")
      else()
        if(ns)
          set(text "namespace ${ns} { ${text} }")
        endif()
        set_property(GLOBAL APPEND PROPERTY _BARACUDA_SET_${set}_EXTERNS "${text}")
      endif()
    endforeach()
  endforeach()
endfunction()

# baracuda_generate_manifest(<family> <manifest> <out-var>): runs the manifest,
# writes the generated files and sets <out-var> to the generated .cu paths.
function(baracuda_generate_manifest family manifest out_var)
  # Fresh state for this family.
  foreach(p _BARACUDA_GEN_SETS _BARACUDA_GEN_TUS _BARACUDA_GEN_OPTIONS)
    get_property(old GLOBAL PROPERTY ${p})
    foreach(x IN LISTS old)
      foreach(k ROWS EXTERNS INCLUDES LINES HITS)
        set_property(GLOBAL PROPERTY _BARACUDA_SET_${x}_${k} "")
        set_property(GLOBAL PROPERTY _BARACUDA_TU_${x}_${k} "")
        set_property(GLOBAL PROPERTY _BARACUDA_OPTION_${x}_${k} "")
      endforeach()
    endforeach()
    set_property(GLOBAL PROPERTY ${p} "")
  endforeach()
  set_property(GLOBAL PROPERTY _BARACUDA_GEN_FAMILY ${family})
  set_property(DIRECTORY "${CMAKE_SOURCE_DIR}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${manifest}")
  include("${manifest}")
  set_property(GLOBAL PROPERTY _BARACUDA_GEN_FAMILY "")

  file(RELATIVE_PATH src_rel "${CMAKE_SOURCE_DIR}" "${manifest}")
  set(banner "// Generated by cmake/BaracudaGenerate.cmake from ${src_rel}: do not edit.\n")
  set(dir "${BARACUDA_GEN_DIR}/ops/${family}")

  # ---- one .cu per TU ----
  get_property(tus GLOBAL PROPERTY _BARACUDA_GEN_TUS)
  set(sources "")
  foreach(tu IN LISTS tus)
    get_property(includes GLOBAL PROPERTY _BARACUDA_TU_${tu}_INCLUDES)
    list(REMOVE_DUPLICATES includes)
    get_property(lines GLOBAL PROPERTY _BARACUDA_TU_${tu}_LINES)
    set(text "${banner}")
    foreach(h IN LISTS includes)
      string(APPEND text "#include \"${h}\"\n")
    endforeach()
    string(APPEND text "\n")
    set(open "")
    foreach(entry IN LISTS lines)
      string(FIND "${entry}" "|" bar)
      string(SUBSTRING "${entry}" 0 ${bar} ns)
      math(EXPR bar "${bar} + 1")
      string(SUBSTRING "${entry}" ${bar} -1 line)
      if(NOT ns STREQUAL open)
        if(open)
          string(APPEND text "}  // namespace ${open}\n")
        endif()
        if(ns)
          string(APPEND text "namespace ${ns} {\n")
        endif()
        set(open "${ns}")
      endif()
      string(APPEND text "${line}\n")
    endforeach()
    if(open)
      string(APPEND text "}  // namespace ${open}\n")
    endif()
    _baracuda_write_if_changed("${dir}/cuda/${tu}.cu" "${text}")
    list(APPEND sources "${dir}/cuda/${tu}.cu")
  endforeach()
  # TUs a previous configure wrote but the manifest (or a filter) no longer has.
  file(GLOB stale "${dir}/cuda/*.cu")
  foreach(f IN LISTS stale)
    if(NOT f IN_LIST sources)
      file(REMOVE "${f}")
    endif()
  endforeach()

  # ---- the manifest header ----
  string(TOUPPER "${family}" FAMILY)
  set(text "${banner}// The ${family} kernels this build instantiates, as X-macro lists for the\n")
  string(APPEND text "// dispatchers' tables and switches (one X(...) per instantiated row).\n#pragma once\n")
  get_property(options GLOBAL PROPERTY _BARACUDA_GEN_OPTIONS)
  list(REMOVE_DUPLICATES options)
  foreach(option IN LISTS options)
    set(value "${${option}}")
    if(NOT value)
      set(value "all")
    endif()
    # A listed value that matches no row is a typo, not a smaller build.
    get_property(hits GLOBAL PROPERTY _BARACUDA_OPTION_${option}_HITS)
    if(NOT value STREQUAL "all")
      foreach(v IN LISTS value)
        if(NOT v IN_LIST hits)
          message(FATAL_ERROR "${option}=${value}: no ${family} kernel has ${v}")
        endif()
      endforeach()
    endif()
    string(APPEND text "\n// The ${option} option of this build (\"all\": no filter).\n")
    string(APPEND text "#define ${option}_VALUE \"${value}\"\n")
  endforeach()
  get_property(sets GLOBAL PROPERTY _BARACUDA_GEN_SETS)
  foreach(set IN LISTS sets)
    string(TOUPPER "${set}" SET)
    get_property(columns GLOBAL PROPERTY _BARACUDA_SET_${set}_COLUMNS)
    if("DTYPE" IN_LIST columns)
      list(FIND columns DTYPE d)
      math(EXPR d "${d} + 1")
      list(INSERT columns ${d} CTYPE)
    endif()
    list(JOIN columns ", " cols)
    get_property(rows GLOBAL PROPERTY _BARACUDA_SET_${set}_ROWS)
    list(LENGTH rows n)
    string(APPEND text "\n// ${set}: X(${cols})\n#define BARACUDA_${SET}_COUNT ${n}\n#define BARACUDA_${SET}_KERNELS(X)")
    foreach(r IN LISTS rows)
      string(APPEND text " \\\n  ${r}")
    endforeach()
    string(APPEND text "\n")
    get_property(externs GLOBAL PROPERTY _BARACUDA_SET_${set}_EXTERNS)
    get_property(has_extern GLOBAL PROPERTY _BARACUDA_SET_${set}_EXTERN)
    if(has_extern)
      string(APPEND text "#define BARACUDA_${SET}_EXTERN")
      foreach(e IN LISTS externs)
        string(APPEND text " \\\n  ${e}")
      endforeach()
      string(APPEND text "\n")
    endif()
  endforeach()
  _baracuda_write_if_changed("${dir}/manifest.hpp" "${text}")
  set(${out_var} "${sources}" PARENT_SCOPE)
endfunction()
