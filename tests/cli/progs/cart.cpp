// SPDX-License-Identifier: MIT
// C++ names for the command: two overloads of shop::Cart::price in a
// namespace, called 10 times each (noipa: no optimised clones, so the
// arguments stay where the signature puts them).
#include <cstdio>
#include <cstring>

#include "progs.h"

namespace shop {
struct Cart {
	NOINLINE int price(const char *sku, int qty)
	{
		return (int)std::strlen(sku) * qty;
	}
	NOINLINE int price(int cents)
	{
		return cents * 2;
	}
};
} // namespace shop

int main()
{
	shop::Cart cart;
	int sum = 0;
	for (int i = 0; i < 10; i++)
		sum += cart.price("apple", i) + cart.price(i);
	std::printf("cart: sum=%d\n", sum);
	return 0;
}
