# BLAS and LAPACK: OpenBLAS from PyPI's scipy-openblas64, the build NumPy and SciPy ship (current
# OpenBLAS, kernels chosen at run time for the CPU, 64-bit integers, every symbol prefixed
# scipy_ and suffixed 64_ so it never clashes with another BLAS in the process). Debian's
# OpenBLAS 0.3.21 is older and, on CPUs newer than it, runs generic kernels.
# Found through its Python package (scripts/install_deps.sh puts it in .venv; pyproject.toml
# requires it for `pip install .`), unless GAUSSKL_OPENBLAS_LIBRARY and
# GAUSSKL_OPENBLAS_INCLUDE_DIR are given. Defines the target gausskl_openblas.
set(GAUSSKL_OPENBLAS_LIBRARY "" CACHE FILEPATH "libscipy_openblas64_.so (empty: ask Python)")
set(GAUSSKL_OPENBLAS_INCLUDE_DIR "" CACHE PATH "scipy-openblas64's include directory")

if(NOT GAUSSKL_OPENBLAS_LIBRARY OR NOT GAUSSKL_OPENBLAS_INCLUDE_DIR)
  # The interpreter: scikit-build-core's, else the project's .venv, else the first on PATH.
  if(Python_EXECUTABLE)
    set(gausskl_blas_python "${Python_EXECUTABLE}")
  elseif(EXISTS "${CMAKE_CURRENT_SOURCE_DIR}/.venv/bin/python")
    set(gausskl_blas_python "${CMAKE_CURRENT_SOURCE_DIR}/.venv/bin/python")
  else()
    find_package(Python 3.9 REQUIRED COMPONENTS Interpreter)
    set(gausskl_blas_python "${Python_EXECUTABLE}")
  endif()
  execute_process(
    COMMAND "${gausskl_blas_python}" -c
            "import scipy_openblas64 as s; print(s.get_lib_dir()); print(s.get_include_dir()); print(s.get_library())"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "gausskl needs OpenBLAS from the Python package scipy-openblas64 "
                        "(run scripts/install_deps.sh, or pip install scipy-openblas64 into "
                        "${gausskl_blas_python}); or pass -DGAUSSKL_OPENBLAS_LIBRARY=... "
                        "-DGAUSSKL_OPENBLAS_INCLUDE_DIR=...\n${err}")
  endif()
  string(REPLACE "\n" ";" out "${out}")
  list(GET out 0 lib_dir)
  list(GET out 1 inc_dir)
  list(GET out 2 lib_name)
  set(GAUSSKL_OPENBLAS_LIBRARY "${lib_dir}/lib${lib_name}.so" CACHE FILEPATH "" FORCE)
  set(GAUSSKL_OPENBLAS_INCLUDE_DIR "${inc_dir}" CACHE PATH "" FORCE)
endif()
message(STATUS "gausskl: OpenBLAS ${GAUSSKL_OPENBLAS_LIBRARY}")

# An interface target holding the full path: the exported static library carries the path
# itself, and CMake puts the path's directory on the build tree's rpath.
add_library(gausskl_openblas INTERFACE)
target_include_directories(gausskl_openblas SYSTEM INTERFACE
                           $<BUILD_INTERFACE:${GAUSSKL_OPENBLAS_INCLUDE_DIR}>)
target_link_libraries(gausskl_openblas INTERFACE ${GAUSSKL_OPENBLAS_LIBRARY})
