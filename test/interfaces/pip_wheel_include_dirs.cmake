# ROS 2 from PyPI wheels: the exported CMake targets of the wheels name the
# include dirs of the machine that built them (e.g.
# /opt/python/cp311-cp311/include/python3.11 and that machine's numpy include).
# Point them at this interpreter's dirs. On a ROS install from the
# distribution, or when those dirs exist, nothing matches and this is a no-op.
find_package(Python3 REQUIRED COMPONENTS Interpreter Development.Module NumPy)
get_directory_property(_harness_imported_targets IMPORTED_TARGETS)
foreach(_target IN LISTS _harness_imported_targets)
  get_target_property(_dirs ${_target} INTERFACE_INCLUDE_DIRECTORIES)
  if(NOT _dirs)
    continue()
  endif()
  set(_fixed "")
  foreach(_dir IN LISTS _dirs)
    if(NOT _dir MATCHES "^\\$<" AND NOT EXISTS "${_dir}")
      if(_dir MATCHES "/include/python3\\.[0-9]+$")
        set(_dir "${Python3_INCLUDE_DIRS}")
      elseif(_dir MATCHES "/numpy/(_core|core)/include$")
        set(_dir "${Python3_NumPy_INCLUDE_DIRS}")
      endif()
    endif()
    list(APPEND _fixed "${_dir}")
  endforeach()
  if(NOT "${_fixed}" STREQUAL "${_dirs}")
    set_target_properties(${_target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_fixed}")
  endif()
endforeach()
