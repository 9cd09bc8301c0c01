# Installs the build into PREFIX and runs PREFIX/bin/cnn-train from / with no configuration in the environment:
# a model name must resolve to PREFIX/share/cnn/configs/models, and a benchmark step must run.
# usage: cmake -DBUILD_DIR=... -DPREFIX=... -P install_test.cmake
file(REMOVE_RECURSE ${PREFIX})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX} RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc})")
endif()
unset(ENV{CNN_SOURCE_DIR})
unset(ENV{CNN_MODEL_CONFIG_DIR})
execute_process(COMMAND ${PREFIX}/bin/cnn-train --model no_such_model WORKING_DIRECTORY /
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(FIND "${err}" "${PREFIX}/share/cnn/configs/models/no_such_model.yaml" at)
if(rc EQUAL 0 OR at EQUAL -1)
  message(FATAL_ERROR "expected the installed configs folder in the error, got (${rc}): ${out}${err}")
endif()
execute_process(COMMAND ${PREFIX}/bin/cnn-train --model convmixer_128_6_k7_p2 --synthetic --steps 1 --bench-warmup 0
                        --batch-size 2 --device cpu --workers 1
                WORKING_DIRECTORY / RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the installed cnn-train failed from / (${rc}): ${out}${err}")
endif()
file(REMOVE_RECURSE ${PREFIX})
