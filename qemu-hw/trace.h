#include "trace/trace-hw_qrdma.h"
