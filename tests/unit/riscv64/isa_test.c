/* SPDX-License-Identifier: MIT */
/*
 * The facts of struct np_isa that are rules rather than code: the frame
 * pointer and red zone a script's stack reads rely on (src/agent), and the
 * shapes one debug register can watch (watch_shape, src/core/watch.c).
 */
#include <errno.h>
#include <string.h>

#include "rv_test.h"

TEST(the_frame_pointer_is_s0_and_nothing_lives_below_sp)
{
	CHECK_STR(ISA->reg_names[ISA->fp_reg], "s0");
	CHECK_EQ(ISA->red_zone, 0);
}

TEST(a_watchpoint_covers_1_to_8_bytes_of_one_aligned_doubleword)
{
	char why[200];

	CHECK_EQ(ISA->watch_shape(0x1000, 8, why, sizeof(why)), 0);
	CHECK_EQ(ISA->watch_shape(0x1003, 5, why, sizeof(why)), 0);
	CHECK_EQ(ISA->watch_shape(0x1005, 3, why, sizeof(why)), 0);
	CHECK_EQ(ISA->watch_shape(0x1007, 1, why, sizeof(why)), 0);
	CHECK_EQ(ISA->watch_shape(0x1006, 4, why, sizeof(why)), -EINVAL);
	CHECK(strstr(why, "0x1006 + 4 crosses an 8-byte boundary") != NULL);
	CHECK_EQ(ISA->watch_shape(0x1000, 9, why, sizeof(why)), -EINVAL);
	CHECK_STR(why, "length 9: a watchpoint covers 1 to 8 bytes");
	CHECK_EQ(ISA->watch_shape(0x1000, 0, why, sizeof(why)), -EINVAL);
}

TEST_MAIN()
