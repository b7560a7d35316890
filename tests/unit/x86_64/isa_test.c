/* SPDX-License-Identifier: MIT */
/*
 * The facts of struct np_isa that are rules rather than code: the frame
 * pointer and red zone a script's stack reads rely on (src/agent), and the
 * shapes one debug register can watch (watch_shape, src/core/watch.c).
 */
#include <errno.h>
#include <string.h>

#include "x86_test.h"

TEST(the_frame_pointer_is_rbp_and_the_red_zone_is_128_bytes)
{
	CHECK_STR(ISA->reg_names[ISA->fp_reg], "rbp");
	CHECK_EQ(ISA->red_zone, 128);
}

TEST(a_debug_register_watches_1_2_4_or_8_naturally_aligned_bytes)
{
	char why[200];

	CHECK_EQ(ISA->watch_shape(0x1001, 1, why, sizeof(why)), 0);
	CHECK_EQ(ISA->watch_shape(0x1002, 2, why, sizeof(why)), 0);
	CHECK_EQ(ISA->watch_shape(0x1004, 4, why, sizeof(why)), 0);
	CHECK_EQ(ISA->watch_shape(0x1008, 8, why, sizeof(why)), 0);
	CHECK_EQ(ISA->watch_shape(0x1000, 3, why, sizeof(why)), -EINVAL);
	CHECK_STR(why, "length 3: x86-64 debug registers watch 1, 2, 4 or 8 bytes");
	CHECK_EQ(ISA->watch_shape(0x1000, 16, why, sizeof(why)), -EINVAL);
	CHECK_EQ(ISA->watch_shape(0x1004, 8, why, sizeof(why)), -EINVAL);
	CHECK(strstr(why, "0x1004 is not 8-byte aligned") != NULL);
	CHECK_EQ(ISA->watch_shape(0x1001, 2, why, sizeof(why)), -EINVAL);
}

TEST_MAIN()
