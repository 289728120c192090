/* placeholder: the lzma codec is being written */
int main(void)
{
	return 77;
}
