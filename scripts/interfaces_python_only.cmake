# Included by scripts/build_interfaces.sh (CMAKE_PROJECT_INCLUDE) when it builds a test
# stand-in: rosidl_generate_interfaces() then runs only the generators a Python process
# (rclpy) uses: the type description, the C structs, the C type supports (Fast DDS and
# introspection) and the Python bindings. The C++ headers and type supports
# (rosidl_generator_cpp, rosidl_typesupport_cpp, rosidl_typesupport_introspection_cpp,
# rosidl_typesupport_fastrtps_cpp) are two thirds of a package's compile time, and nothing
# in the tests is written in C++.
#
# The generators register themselves on the ament extension point
# "rosidl_generate_idl_interfaces"; rosidl_generate_interfaces() sets
# rosidl_generate_interfaces_TARGET just before it runs them, so a watch on that variable
# (a macro: it runs in the caller's scope) drops the C++ ones from the list then.
macro(_harness_ros_python_only_generators _variable _access)
  if("${_access}" STREQUAL "MODIFIED_ACCESS")
    set(_harness_ros_generators "")
    foreach(_harness_ros_extension IN LISTS AMENT_EXTENSIONS_rosidl_generate_idl_interfaces)
      if(NOT _harness_ros_extension MATCHES
          "^rosidl_(generator_cpp|typesupport_cpp|typesupport_introspection_cpp|typesupport_fastrtps_cpp):")
        list(APPEND _harness_ros_generators "${_harness_ros_extension}")
      endif()
    endforeach()
    set(AMENT_EXTENSIONS_rosidl_generate_idl_interfaces "${_harness_ros_generators}")
    message(STATUS "harness_ros: Python-only interface generators: ${_harness_ros_generators}")
  endif()
endmacro()
variable_watch(rosidl_generate_interfaces_TARGET _harness_ros_python_only_generators)
