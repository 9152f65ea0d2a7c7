/* SPDX-License-Identifier: MIT */
/* The unit of partial_aranges that .debug_aranges lists (partial_aranges.c says why). */
double listed_helper(double x);

double listed_helper(double x)
{
	return x * 0.5;
}
