# The layering (docs/design.md, "Layers"), stated once for the build and for the check.
#
# HCASIM_LAYERS: one entry per source folder, "FOLDER=USES" with USES a comma-separated list of
# the folders FOLDER may #include directly ("-" for none). What a folder may use is the closure:
# a folder that may use sim/ also sees what sim/ uses, since sim/'s headers include them.
# HCASIM_LAYER_BANS: "FOLDER=PREFIX,..." system headers a folder must not include (SimGrid in
# model/, sdp/, hca/ and frontends/; rdma-core and Asio in model/, sdp/ and hca/).
#
# Two users:
#  - hcasim_layer(TARGET FOLDER): the target compiles with an include tree of its own that holds
#    only the folders FOLDER may use (symbolic links in build/layers/FOLDER/), so an #include
#    across the layering fails to compile, naming the header it could not find.
#  - tests/check_layers.cmake (ctest Layers.Includes): reads every source file and names each
#    #include that crosses the table, FILE:LINE, including the banned system headers, which an
#    include tree cannot stop.
set(HCASIM_LAYERS
  "model=-"
  "util=model"
  "sdp=model"
  "hca=model,sdp"
  "frontends=model,util"
  "sim=model,sdp,hca,frontends"
  "emu=model,sdp,hca"
  "hw=model,sdp"
  "rt=model,sdp,emu,hw,frontends,util"
  "scenarios=model,sdp,hca,sim,frontends,util")
# The engines and devices a folder below sim/, emu/ and hw/ must not see.
set(hcasim_no_engines "simgrid/,simgrid.h,infiniband/,rdma/,boost/asio")
set(HCASIM_LAYER_BANS
  "model=${hcasim_no_engines}"
  "util=${hcasim_no_engines}"
  "sdp=${hcasim_no_engines}"
  "hca=${hcasim_no_engines}"
  "frontends=${hcasim_no_engines}")

# hcasim_layer_uses(FOLDER OUT): the folders FOLDER may include, itself first, then the closure
# of the table in a fixed order. A folder not in the table is a configuration error.
function(hcasim_layer_uses folder out)
  set(result ${folder})
  set(todo ${folder})
  while(todo)
    list(POP_FRONT todo f)
    set(found OFF)
    foreach(entry ${HCASIM_LAYERS})
      string(REPLACE "=" ";" kv "${entry}")
      list(GET kv 0 k)
      if(k STREQUAL f)
        set(found ON)
        list(GET kv 1 uses)
        if(NOT uses STREQUAL "-")
          string(REPLACE "," ";" uses "${uses}")
          foreach(u ${uses})
            if(NOT u IN_LIST result)
              list(APPEND result ${u})
              list(APPEND todo ${u})
            endif()
          endforeach()
        endif()
      endif()
    endforeach()
    if(NOT found)
      message(FATAL_ERROR "cmake/layers.cmake: folder '${f}' is not in HCASIM_LAYERS")
    endif()
  endwhile()
  set(${out} ${result} PARENT_SCOPE)
endfunction()

# hcasim_layer(TARGET FOLDER): TARGET's sources (in FOLDER) see FOLDER and what it may use,
# and nothing else of the tree: build/layers/FOLDER/<used> -> the source folder <used>.
function(hcasim_layer target folder)
  hcasim_layer_uses(${folder} uses)
  set(root ${CMAKE_BINARY_DIR}/layers/${folder})
  file(REMOVE_RECURSE ${root})  # made anew: a folder taken off the table loses its link
  file(MAKE_DIRECTORY ${root})
  foreach(u ${uses})
    file(CREATE_LINK ${CMAKE_SOURCE_DIR}/${u} ${root}/${u} SYMBOLIC)
  endforeach()
  target_include_directories(${target} PRIVATE ${root})
  set_property(TARGET ${target} PROPERTY HCASIM_LAYER ${folder})
  set_property(GLOBAL APPEND PROPERTY HCASIM_LAYERED_TARGETS ${target})
endfunction()

# hcasim_check_layer_links(): at the end of the configuration, every target given a layer links
# (directly) only hcasim libraries of folders its layer may use; a configuration error names the
# target and the library otherwise. Libraries of no layer (hcasim_tree, system ones) are not
# checked.
function(hcasim_check_layer_links)
  get_property(targets GLOBAL PROPERTY HCASIM_LAYERED_TARGETS)
  foreach(t ${targets})
    get_target_property(folder ${t} HCASIM_LAYER)
    hcasim_layer_uses(${folder} uses)
    get_target_property(libs ${t} LINK_LIBRARIES)
    if(NOT libs)
      continue()
    endif()
    foreach(lib ${libs})
      if(TARGET ${lib})
        get_target_property(lib_folder ${lib} HCASIM_LAYER)
        if(lib_folder AND NOT lib_folder IN_LIST uses)
          message(FATAL_ERROR "cmake/layers.cmake: ${t} (${folder}/) links ${lib} (${lib_folder}/), which ${folder}/ may not use")
        endif()
      endif()
    endforeach()
  endforeach()
endfunction()
