# hybrid_parallel_core: the example's model, data, schedule and reference
# checksum, pure C++ (no NCCL). Included by this folder's CMakeLists.txt
# and by sim/ (which runs the example's stream program as a workload), so
# it exists in builds that leave the examples module out.
if(TARGET hybrid_parallel_core)
  return()
endif()
set(_hp_dir ${CMAKE_CURRENT_LIST_DIR})
add_library(hybrid_parallel_core STATIC
  ${_hp_dir}/config.cc
  ${_hp_dir}/data_model.cc
  ${_hp_dir}/model.cc
  ${_hp_dir}/reference.cc
  ${_hp_dir}/schedule.cc
)
target_include_directories(hybrid_parallel_core PUBLIC ${_hp_dir})
target_link_libraries(hybrid_parallel_core PUBLIC nlohmann_json::nlohmann_json PRIVATE CLI11::CLI11)
