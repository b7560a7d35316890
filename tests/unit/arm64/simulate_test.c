#include "a64_test.h"
TEST_MAIN()
