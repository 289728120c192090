/* placeholder: the compress codec is being written */
int main(void)
{
	return 77;
}
