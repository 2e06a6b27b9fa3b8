# The ctest Consumer.FindPackage: install the build tree into a fresh temporary prefix
# (cmake --install), then configure, build and run tests/consumer against it with
# find_package(gausskl), the way a downstream project would.
# Run: cmake -DBUILD_DIR=<build dir> -DSOURCE_DIR=<tests/consumer> -DWORK_DIR=<scratch dir>
#            -DGENERATOR=<generator> -DCXX=<compiler> -DBUILD_TYPE=<type> [-DFLAGS=<flags>]
#            -P tests/consumer/run.cmake
foreach(var BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR CXX)
  if(NOT ${var})
    message(FATAL_ERROR "pass -D${var}=...")
  endif()
endforeach()

# A clean prefix and consumer build every run: nothing left over from an earlier install.
file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")
set(build "${WORK_DIR}/build")

function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}")
  endif()
  message(STATUS "${what}: ok")
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

step("cmake --install" "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}")
if(NOT EXISTS "${prefix}/lib/cmake/gausskl/gaussklConfig.cmake"
   AND NOT EXISTS "${prefix}/lib64/cmake/gausskl/gaussklConfig.cmake")
  message(FATAL_ERROR "the install put no gaussklConfig.cmake under ${prefix}")
endif()
# Only the install prefix: the consumer must not find the build tree or its sources.
step("configure the consumer" "${CMAKE_COMMAND}" -S "${SOURCE_DIR}" -B "${build}"
     -G "${GENERATOR}" "-DCMAKE_CXX_COMPILER=${CXX}" "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}"
     "-DCMAKE_PREFIX_PATH=${prefix}" "-DCMAKE_CXX_FLAGS=${FLAGS}"
     "-DCMAKE_EXE_LINKER_FLAGS=${FLAGS}")
step("build the consumer" "${CMAKE_COMMAND}" --build "${build}")
find_program(consumer consumer PATHS "${build}" "${build}/${BUILD_TYPE}" NO_DEFAULT_PATH)
if(NOT consumer)
  message(FATAL_ERROR "no consumer executable in ${build}")
endif()
step("run the consumer" "${consumer}")
message(STATUS "${last_output}")
