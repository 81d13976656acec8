# A one-file command (`runpatch tree LIB`, one hook call) runs ~900 functions
# spread over 3 MB of code: about 45 page faults of 64 KiB windows, a fifth of
# its time. Linked in the order they first run (tools/startup-order.txt, made by
# scripts/gen-startup-order) they fit in a few windows (docs/performance.md).
# Needs lld's --symbol-ordering-file and one section per function; without lld
# the tools link as before.
option(RUNPATCH_ORDER_STARTUP "Link the tools' start-up code contiguously (needs lld)" ON)
set(RUNPATCH_STARTUP_ORDER_FILE ${PROJECT_SOURCE_DIR}/tools/startup-order.txt)
set(RUNPATCH_STARTUP_ORDER_LINK_OPTIONS "")
if(RUNPATCH_ORDER_STARTUP AND NOT RUNPATCH_SANITIZE AND NOT RUNPATCH_FUZZ)
  include(CheckCXXSourceCompiles)
  set(_order_options -fuse-ld=lld -Wl,--symbol-ordering-file=${RUNPATCH_STARTUP_ORDER_FILE}
                     -Wl,--no-warn-symbol-ordering)
  set(CMAKE_REQUIRED_LINK_OPTIONS ${_order_options})
  check_cxx_source_compiles("int main() {}" RUNPATCH_CAN_ORDER_STARTUP)
  unset(CMAKE_REQUIRED_LINK_OPTIONS)
  if(RUNPATCH_CAN_ORDER_STARTUP)
    add_compile_options(-ffunction-sections)
    set(RUNPATCH_STARTUP_ORDER_LINK_OPTIONS ${_order_options})
  else()
    message(STATUS "lld not usable: the tools link without the start-up order (slower start)")
  endif()
endif()
