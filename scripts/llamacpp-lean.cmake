# Included into llama.cpp's own project() by scripts/setup.sh (CMAKE_PROJECT_llama.cpp_INCLUDE) when it builds
# llama-cpp-python from source: specbench calls libllama alone, so llama.cpp's "common" helper library (chat
# templates, argument parsing, HTTP downloads; about half of the compile time on two cores) is left out.
# llama-cpp-python forces the cache option LLAMA_BUILD_COMMON on; a normal variable set here shadows it.
set(LLAMA_BUILD_COMMON OFF)
