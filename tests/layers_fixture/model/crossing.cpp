// A planted crossing for ctest Layers.FailsOnACrossing (never compiled): model/ may use nothing
// above it, so tests/check_layers.cmake must name line 4.
#include "model/units.h"
#include "sim/kernel.h"
