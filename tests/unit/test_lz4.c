/* placeholder: the lz4 codec is being written */
int main(void)
{
	return 77;
}
