/* placeholder: the lzip codec is being written */
int main(void)
{
	return 77;
}
