# cmake -DPROGRAM=exe -DEXPECTED=file -P run_and_compare.cmake: runs PROGRAM and fails unless it
# exits 0 and its standard output is exactly the contents of EXPECTED.
execute_process(COMMAND ${PROGRAM} RESULT_VARIABLE status OUTPUT_VARIABLE got ERROR_VARIABLE err)
file(READ ${EXPECTED} want)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} exited with ${status}\n${err}")
endif()
if(NOT got STREQUAL want)
  message(FATAL_ERROR "${PROGRAM} printed\n${got}\nwhere README.md shows\n${want}")
endif()
