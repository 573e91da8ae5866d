// A planted banned system header for ctest Layers.FailsOnACrossing (never compiled): sdp/ has
// no SimGrid (docs/design.md "Layers"), so tests/check_layers.cmake must name line 3.
#include <simgrid/s4u.hpp>
