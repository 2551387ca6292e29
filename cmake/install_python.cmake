# Installs the Python package (run by `cmake --install`; CMakeLists.txt sets the SPTUNE_* variables first):
# into SPTUNE_PYTHON_DIR, else where the prefix's Python looks (python_sitedir.py), else
# <prefix>/<libdir>/python3/site-packages; beside it sptune/_installed.py names the library installed with it.
set(dir "${SPTUNE_PYTHON_DIR}")
if(NOT dir AND SPTUNE_PYTHON)
  execute_process(COMMAND "${SPTUNE_PYTHON}" "${SPTUNE_SOURCE}/cmake/python_sitedir.py" "${CMAKE_INSTALL_PREFIX}"
                  OUTPUT_VARIABLE dir OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
  if(rc)
    set(dir "")
  endif()
endif()
if(NOT dir)
  set(dir "${CMAKE_INSTALL_PREFIX}/${SPTUNE_LIBDIR}/python3/site-packages")
endif()
file(INSTALL "${SPTUNE_SOURCE}/python/sptune" DESTINATION "${dir}" PATTERN "__pycache__" EXCLUDE)
file(WRITE "${SPTUNE_BINARY}/_installed.py" "# written by cmake --install: the library this package was installed with\n"
                                             "LIBRARY = \"${CMAKE_INSTALL_PREFIX}/${SPTUNE_LIBDIR}/${SPTUNE_SONAME}\"\n")
file(INSTALL "${SPTUNE_BINARY}/_installed.py" DESTINATION "${dir}/sptune")
message(STATUS "Python package: ${dir}/sptune")
# a prefix outside Python's own (a user's ~/opt, a test prefix) installs where `import sptune` fails: say how to fix it
if(SPTUNE_PYTHON)
  execute_process(COMMAND "${SPTUNE_PYTHON}" -c
                  "import os, sys; sys.exit(0 if os.path.abspath(sys.argv[1]) in map(os.path.abspath, sys.path) else 1)"
                  "${dir}" RESULT_VARIABLE on_path OUTPUT_QUIET ERROR_QUIET)
  if(on_path)
    message(STATUS "Python package: ${dir} is not on the sys.path of ${SPTUNE_PYTHON}: "
                   "import sptune needs PYTHONPATH=${dir} (or configure with -DSPTUNE_PYTHON_DIR=DIR, a folder it searches)")
  endif()
else()
  message(STATUS "Python package: no Python 3 was found to ask whether it searches ${dir}; if not, "
                 "import sptune needs PYTHONPATH=${dir}")
endif()
